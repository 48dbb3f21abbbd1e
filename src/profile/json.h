// A small JSON reader, enough to load trace files back (onyx profile, tests).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace onyx {

struct Json {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;  // in document order

  const Json* get(const std::string& key) const;  // null when absent or not an object
  std::string str(const std::string& key, const std::string& def = "") const;
  double num(const std::string& key, double def = 0) const;
};

// Parses `text`; throws onyx::Error (InvalidArgument) naming the offset on bad input.
Json parse_json(const std::string& text);

}  // namespace onyx
