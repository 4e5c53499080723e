// The committed fixtures of imaging_unit_tests (tests/data/imaging, made by make_fixtures.py).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "base/npy.h"
#include "imaging/image.h"

namespace inferloop::imaging::testing {

inline std::string FixturePath(const std::string& name) {
  return std::string(INFERLOOP_SOURCE_DIR) + "/tests/data/imaging/" + name;
}

inline std::string ReadFixtureBytes(const std::string& name) {
  std::ifstream f(FixturePath(name), std::ios::binary);
  EXPECT_TRUE(f.good()) << FixturePath(name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline Tensor ReadFixtureNpy(const std::string& name) {
  auto t = ReadNpyFile(FixturePath(name));
  EXPECT_TRUE(t.ok()) << name << ": " << t.status().ToString();
  return t.ok() ? std::move(*t) : Tensor();
}

}  // namespace inferloop::imaging::testing
