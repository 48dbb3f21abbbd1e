// Helpers for tests that run whole models through onyx::Session.
#pragma once
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "model_builder.h"
#include "onyx/session.h"
#include "onyx/status.h"

namespace onyx::test {

inline std::unique_ptr<Session> load(const onnx::ModelProto& m, SessionOptions options = {}) {
  std::string bytes = serialize(m);
  return Session::from_bytes(bytes.data(), bytes.size(), options);
}

// At an optimization level, saving the optimized model to `save_to` when given.
inline std::unique_ptr<Session> load(const onnx::ModelProto& m, OptimizationLevel level,
                                     const std::string& save_to = "") {
  SessionOptions o;
  o.optimization_level = level;
  o.optimized_model_filepath = save_to;
  return load(m, o);
}

// The values of a float tensor.
inline std::vector<float> floats(const Value& v) {
  const Tensor& t = v.tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// Runs `fn` and returns the Error it throws (fails the test if none).
template <class F>
Error error_of(F fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an onyx::Error";
  return Error(ErrorCode::Fail, "");
}

// A fixture with a fresh folder, dir_, removed after each test.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("onyx_" + std::string(info->test_suite_name()) + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

}  // namespace onyx::test
