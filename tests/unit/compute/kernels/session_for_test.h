// The session the compute kernel tests run a model in: made from serialized model bytes with the
// default options (or a lower max_tensor_bytes), a test failure and nullptr when that fails.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "inferloop/session.h"

namespace inferloop::testing {

inline std::unique_ptr<Session> Make(const std::string& bytes, size_t max_bytes = SessionOptions{}.max_tensor_bytes) {
  SessionOptions opts;
  opts.max_tensor_bytes = max_bytes;
  auto s = Session::CreateFromBytes(bytes.data(), bytes.size(), opts);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

}  // namespace inferloop::testing
