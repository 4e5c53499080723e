// Data sets for the quantizer and `compare --sensitivity`: calibration and evaluation samples in
// the layout of `inferloop compare` (sample_data.h LoadSamples), cut into runnable chunks.
//
// An input tensor whose first dimension is a batch of samples is split into chunks along it: when
// the model declares that dimension symbolic, into chunks of up to `max_chunk` rows; when it
// declares a fixed size d and the data holds k*d rows (k > 1), into chunks of d rows. An eval
// folder may hold labels.npy (one integer label per row over all samples in order), which is not
// an input unless the model has an input named "labels".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/sample_data.h"

namespace inferloop {

struct QuantDataSet {
  std::string dir;
  std::vector<Sample> chunks;   // each runnable as one model run
  int64_t rows = 0;             // samples in all chunks (first dim summed; 1 per unbatched sample)
  std::vector<int64_t> labels;  // from labels.npy; empty when absent
  uint64_t fingerprint = 0;     // hash of the inputs' names, shapes and bytes
};

// Loads `dir` for a model with `inputs`. Errors: missing/empty folder, no file named after a
// model input, unreadable files, labels.npy that is not an integer vector.
Result<QuantDataSet> LoadQuantData(const std::string& dir, const std::vector<ValueInfo>& inputs, int max_chunk = 8);

// `s` with every input whose first dimension the model declares symbolic cut to its first row
// (one sample, e.g. for timing).
Result<Sample> FirstRow(const Sample& s, const std::vector<ValueInfo>& inputs);

// FNV-1a 64-bit hash of bytes, chainable.
uint64_t Fnv1a64(const void* data, size_t n, uint64_t h = 1469598103934665603ull);
// Hex digest of a file's bytes (FNV-1a 64), for matching saved statistics to a model.
Result<std::string> FileHash(const std::string& path);


}  // namespace inferloop
