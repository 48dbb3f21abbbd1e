#include "op_test_util.h"

namespace onyx::test {
namespace {

std::vector<std::string> tokenize(std::map<std::string, Attribute> attrs, std::vector<std::string> x, Shape* shape) {
  attrs.emplace("pad_value", attr_string("#"));
  auto out = run_op(make_node("Tokenizer", {"x"}, {"y"}, attrs, "com.microsoft"),
                    {Tensor::from_vector<std::string>(x, {static_cast<int64_t>(x.size())})}, 1);
  *shape = out[0].shape();
  return to_vector<std::string>(out[0]);
}

TEST(Tokenizer, TokenPatternPadsToTheLongestRowAndMarks) {
  Shape shape;
  auto y = tokenize({{"tokenexp", attr_string("[a-zA-Z0-9_]+")}, {"mark", attr_int(1)}, {"mincharnum", attr_int(2)}},
                    {"Hello, a World!", "", "x y zz"}, &shape);
  EXPECT_EQ(shape, (Shape{3, 4}));
  EXPECT_EQ(y, (std::vector<std::string>{"\x02", "Hello", "World", "\x03", "\x02", "\x03", "#", "#", "\x02", "zz", "\x03", "#"}));
}

TEST(Tokenizer, SeparatorsAndCharacters) {
  Shape shape;
  auto y = tokenize({{"separators", attr_strings({" ", "-"})}}, {"dog-days  ok", "x"}, &shape);
  EXPECT_EQ(shape, (Shape{2, 3}));
  EXPECT_EQ(y, (std::vector<std::string>{"dog", "days", "ok", "x", "#", "#"}));
  auto chars = tokenize({{"separators", attr_strings({""})}}, {"h\xC3\xA9", "abc"}, &shape);  // "hé": 2 characters
  EXPECT_EQ(shape, (Shape{2, 3}));
  EXPECT_EQ(chars, (std::vector<std::string>{"h", "\xC3\xA9", "#", "a", "b", "c"}));
  // No token anywhere: no width, and no marks.
  tokenize({{"tokenexp", attr_string("[a-z]+")}, {"mark", attr_int(1)}}, {"12", ""}, &shape);
  EXPECT_EQ(shape, (Shape{2, 0}));
}

TEST(Tokenizer, RejectsAmbiguousOrBadPatterns) {
  Shape shape;
  EXPECT_THROW(tokenize({}, {"a"}, &shape), Error);
  EXPECT_THROW(tokenize({{"tokenexp", attr_string("[a-")}}, {"a"}, &shape), Error);
  EXPECT_THROW(tokenize({{"tokenexp", attr_string("a")}, {"separators", attr_strings({" "})}}, {"a"}, &shape), Error);
}

}  // namespace
}  // namespace onyx::test
