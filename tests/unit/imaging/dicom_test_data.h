// Reading tests/data/dicom fixtures (made by tests/data/dicom/make_dicom_fixtures.py) in the
// imaging tests: file bytes, .npy arrays as floats, and a series directory's files in name order.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "base/file_bytes.h"
#include "base/npy.h"

namespace inferloop::imaging::testing {

inline std::string DicomDataPath(const std::string& relative) {
  return std::string(INFERLOOP_SOURCE_DIR) + "/tests/data/dicom/" + relative;
}

inline std::string ReadBytes(const std::string& relative) {
  auto bytes = ReadFileBytes(DicomDataPath(relative));
  EXPECT_TRUE(bytes.ok()) << relative << ": " << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::string();
}

template <typename T>
std::vector<float> ToFloats(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<float>(p, p + t.nbytes() / sizeof(T));
}

// The .npy's values as floats, whatever its integer or float dtype.
inline std::vector<float> ReadNpyFloats(const std::string& relative) {
  auto t = ReadNpyFile(DicomDataPath(relative));
  EXPECT_TRUE(t.ok()) << relative << ": " << t.status().ToString();
  if (!t.ok()) return {};
  switch (t->dtype()) {
    case DataType::kFloat: return ToFloats<float>(*t);
    case DataType::kUInt8: return ToFloats<uint8_t>(*t);
    case DataType::kInt16: return ToFloats<int16_t>(*t);
    case DataType::kUInt16: return ToFloats<uint16_t>(*t);
    case DataType::kInt32: return ToFloats<int32_t>(*t);
    case DataType::kUInt32: return ToFloats<uint32_t>(*t);
    default: ADD_FAILURE() << relative << ": unexpected dtype"; return {};
  }
}

// The .dcm files of tests/data/dicom/series/<name>, sorted by file name.
inline std::vector<std::string> ReadSeriesFiles(const std::string& name) {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(DicomDataPath("series/" + name)))
    if (e.path().extension() == ".dcm") paths.push_back(e.path().filename().string());
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> bytes;
  for (const auto& p : paths) bytes.push_back(ReadBytes("series/" + name + "/" + p));
  return bytes;
}

}  // namespace inferloop::imaging::testing
