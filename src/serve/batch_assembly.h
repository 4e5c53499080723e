// Batch assembly: turning a batch of requests into the model's inputs and the model's outputs back
// into per-request tensors, plus each request's batch rows and batch key for the DynamicBatcher.
//
// Dim 0 is the batch dimension. Every dtype works, STRING (v2 BYTES) included. A batch of one
// request shares its tensors (Tensor copies are shallow): nothing is copied, whatever the ranks,
// which is also what a model that does not batch needs. Larger batches are concatenated into /
// sliced out of freshly allocated contiguous tensors.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "inferloop/status.h"
#include "inferloop/tensor.h"
#include "serve/infer_request.h"

namespace inferloop::serve {

struct Batch;

// A request's place in a batch.
struct BatchShape {
  int64_t rows = 1;       // its dim 0 (1 for a model that does not batch)
  std::string batch_key;  // equal keys batch together (empty for a model that does not batch)
};

// Rows and key of `request` for a model whose inputs are `input_names` (in the model's order).
// model_batches false: rows 1, empty key, nothing checked. model_batches true: every named input
// must be in the request (InvalidArgument naming it otherwise), have rank >= 1, and all must
// share dim 0 >= 1 (InvalidArgument naming the inputs otherwise); the key is each
// input's dtype and dims[1:], in input_names order. Inputs of the request not in input_names are
// ignored (validating the request against the model is the caller's job).
Result<BatchShape> ComputeBatchShape(const InferRequest& request, const std::vector<std::string>& input_names,
                                     bool model_batches);

// The model's inputs for a batch: for each name in input_names (in order), the requests' tensors
// of that name concatenated along dim 0, in request order. One request: its tensors as they are
// (shared, no copy, any rank). Several: every request must have the input (InvalidArgument),
// with rank >= 1 and the same dtype and dims[1:] as the first request's (InvalidArgument naming
// the input and the request's position otherwise); allocation failures give ResourceExhausted.
Result<std::vector<Tensor>> GatherBatchInputs(const std::vector<const InferRequest*>& requests,
                                              const std::vector<std::string>& input_names);
// The same for a DynamicBatcher batch (its requests' InferRequests in dispatch order).
Result<std::vector<Tensor>> GatherBatchInputs(const Batch& batch, const std::vector<std::string>& input_names);

// Splits a batch's outputs back per request: result[i][j] is output j's rows of request i, where
// request i owns `rows[i]` consecutive rows along dim 0. One request: the outputs as they are
// (shared, no copy, any rank). Several: every output must have rank >= 1 and dim 0 equal to the
// sum of rows (InvalidArgument naming the output otherwise: output_names[j] when given, else
// "#j"); rows must be >= 0. Slices are copies (they do not keep the batch's buffers alive).
Result<std::vector<std::vector<Tensor>>> SplitBatchOutputs(const std::vector<Tensor>& outputs,
                                                           const std::vector<int64_t>& rows,
                                                           const std::vector<std::string>& output_names = {});

// The batch size to run `rows` rows at: the smallest of `buckets` (ascending) that is >= rows, or
// rows itself when none is. Running a model on few distinct batch sizes keeps its per-shape
// kernels (oneDNN primitives, memory plans) cached instead of rebuilt for every new size.
int64_t BucketRows(int64_t rows, const std::vector<int64_t>& buckets);
// The buckets for a model with `max_batch_size`: its preferred sizes, the powers of two below it,
// and max_batch_size itself, ascending and unique.
std::vector<int64_t> BatchBuckets(int64_t max_batch_size, const std::vector<int>& preferred);

// `t` (rank >= 1, dim 0 >= 1) grown to `rows` rows along dim 0 by repeating its last row (real
// data, so padding rows cannot fail where the real rows pass). rows == dim 0: `t` itself.
// InvalidArgument for rows < dim 0 or a scalar; ResourceExhausted if it cannot be allocated.
Result<Tensor> PadRows(const Tensor& t, int64_t rows);

// How a model takes a batch's inputs (from its completed config).
struct BatchInputLayout {
  bool model_batches = false;            // max_batch_size > 0
  std::vector<std::string> input_names;  // the model's inputs, in config order
  std::map<std::string, Shape> reshapes;  // input name -> the config's reshape (no batch dim)
  std::vector<int64_t> buckets;          // batch sizes batches run at (BatchBuckets)
};

// A group of requests as the model runs it.
struct AssembledBatch {
  std::vector<std::string> names;  // the model inputs fed, parallel to `inputs`
  std::vector<Tensor> inputs;
  std::vector<int64_t> request_rows;  // rows each request brings, in request order
  int64_t rows = 0;                   // their sum
  int64_t run_rows = 0;               // rows the model runs at: `rows` padded up to a bucket
  bool model_batches = false;

  // Drops the tensors (inputs), keeping every vector's capacity.
  void Clear() {
    inputs.clear();
    request_rows.clear();
    rows = run_rows = 0;
  }
};

// The model's inputs for `requests` (one of a batch's groups; rows[i]: request i's rows):
// several requests of a batching model are gathered (GatherBatchInputs over the layout's inputs
// the first request has, in config order); otherwise the one request's inputs are fed as they
// are, in its order. Inputs the config reshapes take the reshape (dim 0 kept when the model
// batches). A batching model's inputs are then padded (PadRows) to the bucketed row count
// (BucketRows), so the model sees few distinct shapes. Errors are those of the steps.
Result<AssembledBatch> AssembleBatchInputs(const std::vector<const InferRequest*>& requests,
                                           const std::vector<int64_t>& rows, const BatchInputLayout& layout);
// The same into `b` (every field set; on error `b` holds no tensors), reusing the capacity of its
// vectors and strings: a caller that keeps one AssembledBatch per model instance allocates nothing
// for them once warm. Clear() drops the tensors it holds (keeping the capacity).
Status AssembleBatchInputsInto(const std::vector<const InferRequest*>& requests, const std::vector<int64_t>& rows,
                               const BatchInputLayout& layout, AssembledBatch& b);

// The outputs of a run of `batch` split back per request (result[i][j]: output j of request i;
// the padding rows are dropped). A single unpadded request, or a model that does not batch,
// gets the outputs as they are (shared). Errors as SplitBatchOutputs.
Result<std::vector<std::vector<Tensor>>> SplitAssembledOutputs(const std::vector<Tensor>& outputs,
                                                               const AssembledBatch& batch,
                                                               const std::vector<std::string>& output_names);
// The same into `per_request` (resized to the batch's requests; the inner vectors' capacity is
// reused). On error `per_request` holds no tensors.
Status SplitAssembledOutputsInto(const std::vector<Tensor>& outputs, const AssembledBatch& batch,
                                 const std::vector<std::string>& output_names,
                                 std::vector<std::vector<Tensor>>& per_request);

}  // namespace inferloop::serve
