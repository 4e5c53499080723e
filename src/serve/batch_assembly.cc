#include "serve/batch_assembly.h"

#include <algorithm>

#include <cstring>
#include <limits>

#include "base/status_macros.h"
#include "serve/dynamic_batcher.h"

namespace inferloop::serve {

namespace {

const Tensor* FindInput(const InferRequest& request, const std::string& name) {
  for (const auto& in : request.inputs) {
    if (in.name == name) return &in.tensor;
  }
  return nullptr;
}

Shape Tail(const Shape& s) { return Shape(s.begin() + 1, s.end()); }

bool SameTail(const Shape& a, const Shape& b) {
  return a.size() == b.size() && std::equal(a.begin() + 1, a.end(), b.begin() + 1);
}

std::string TailString(const Shape& s) { return ShapeToString(Tail(s)); }

// Elements in one row of a tensor whose shape is `s` (rank >= 1); -1 on a bad dim or overflow.
int64_t RowElements(const Shape& s) {
  int64_t n = ShapeElementCount(Tail(s));
  return n < 0 ? -1 : n;
}

// Copies `count` elements of `src` starting at element `src_off` into `dst` at `dst_off`.
void CopyElements(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == DataType::kString) {
    const std::string* from = src.strings() + src_off;
    std::string* to = dst.strings() + dst_off;
    for (int64_t i = 0; i < count; ++i) to[i] = from[i];
    return;
  }
  const size_t esize = DataTypeSize(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw_data()) + static_cast<size_t>(dst_off) * esize,
              static_cast<const char*>(src.raw_data()) + static_cast<size_t>(src_off) * esize,
              static_cast<size_t>(count) * esize);
}

}  // namespace

Result<BatchShape> ComputeBatchShape(const InferRequest& request, const std::vector<std::string>& input_names,
                                     bool model_batches) {
  BatchShape out;
  if (!model_batches) return out;
  std::string first_name;
  int64_t rows = -1;
  for (const auto& name : input_names) {
    const Tensor* t = FindInput(request, name);
    if (!t) return Status::InvalidArgument("request has no input '" + name + "'");
    if (t->rank() < 1) {
      return Status::InvalidArgument("input '" + name +
                                     "' is a scalar, but the model batches: every input needs a batch dimension "
                                     "(dim 0)");
    }
    if (rows < 0) {
      rows = t->dim(0);
      first_name = name;
      if (rows < 1) {
        return Status::InvalidArgument("input '" + name + "' has batch size " + std::to_string(rows) +
                                       "; a request needs at least one row");
      }
    } else if (t->dim(0) != rows) {
      return Status::InvalidArgument("inputs of a request must share their batch size (dim 0): '" + first_name +
                                     "' has " + std::to_string(rows) + ", '" + name + "' has " +
                                     std::to_string(t->dim(0)));
    }
    out.batch_key += std::to_string(static_cast<int32_t>(t->dtype()));
    out.batch_key += TailString(t->shape());
    out.batch_key += ';';
  }
  if (rows > 0) out.rows = rows;
  return out;
}

Result<std::vector<Tensor>> GatherBatchInputs(const std::vector<const InferRequest*>& requests,
                                              const std::vector<std::string>& input_names) {
  if (requests.empty()) return Status::InvalidArgument("cannot gather the inputs of an empty batch");
  for (size_t r = 0; r < requests.size(); ++r) {
    if (!requests[r]) return Status::InvalidArgument("batch request #" + std::to_string(r) + " is null");
  }
  std::vector<Tensor> out;
  out.reserve(input_names.size());
  for (const auto& name : input_names) {
    std::vector<const Tensor*> parts;
    parts.reserve(requests.size());
    for (size_t r = 0; r < requests.size(); ++r) {
      const Tensor* t = FindInput(*requests[r], name);
      if (!t || !t->defined()) {
        return Status::InvalidArgument("batch request #" + std::to_string(r) + " has no input '" + name + "'");
      }
      parts.push_back(t);
    }
    if (parts.size() == 1) {
      out.push_back(*parts[0]);  // shallow: shares the request's buffer
      continue;
    }
    const Tensor& first = *parts[0];
    int64_t total = 0;
    for (size_t r = 0; r < parts.size(); ++r) {
      const Tensor& t = *parts[r];
      if (t.rank() < 1) {
        return Status::InvalidArgument("input '" + name + "' of batch request #" + std::to_string(r) +
                                       " is a scalar; batched inputs need a batch dimension (dim 0)");
      }
      if (t.dtype() != first.dtype() || !SameTail(t.shape(), first.shape())) {
        return Status::InvalidArgument("input '" + name + "' of batch request #" + std::to_string(r) + " is " +
                                       DataTypeName(t.dtype()) + ShapeToString(t.shape()) + ", request #0's is " +
                                       DataTypeName(first.dtype()) + ShapeToString(first.shape()) +
                                       "; batched requests need the same dtype and non-batch dims");
      }
      if (t.dim(0) < 0 || total > std::numeric_limits<int64_t>::max() - t.dim(0)) {
        return Status::InvalidArgument("input '" + name + "': bad batch size in request #" + std::to_string(r));
      }
      total += t.dim(0);
    }
    Shape shape = first.shape();
    shape[0] = total;
    IL_ASSIGN_OR_RETURN(Tensor joined, Tensor::Create(first.dtype(), std::move(shape)));
    int64_t offset = 0;
    for (const Tensor* t : parts) {
      CopyElements(*t, 0, joined, offset, t->size());
      offset += t->size();
    }
    out.push_back(std::move(joined));
  }
  return out;
}

Result<std::vector<Tensor>> GatherBatchInputs(const Batch& batch, const std::vector<std::string>& input_names) {
  std::vector<const InferRequest*> requests;
  requests.reserve(batch.requests.size());
  for (const auto& p : batch.requests) requests.push_back(p ? &p->request : nullptr);
  return GatherBatchInputs(requests, input_names);
}

Result<std::vector<std::vector<Tensor>>> SplitBatchOutputs(const std::vector<Tensor>& outputs,
                                                           const std::vector<int64_t>& rows,
                                                           const std::vector<std::string>& output_names) {
  if (rows.empty()) return Status::InvalidArgument("cannot split outputs for an empty batch");
  std::vector<std::vector<Tensor>> out(rows.size());
  if (rows.size() == 1) {
    out[0] = outputs;  // shallow: shares the batch's buffers
    return out;
  }
  int64_t total = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r] < 0 || total > std::numeric_limits<int64_t>::max() - rows[r]) {
      return Status::InvalidArgument("bad row count " + std::to_string(rows[r]) + " for batch request #" +
                                     std::to_string(r));
    }
    total += rows[r];
  }
  for (auto& v : out) v.reserve(outputs.size());
  for (size_t j = 0; j < outputs.size(); ++j) {
    const std::string label = j < output_names.size() ? "'" + output_names[j] + "'" : "#" + std::to_string(j);
    const Tensor& t = outputs[j];
    if (!t.defined()) return Status::InvalidArgument("output " + label + " has no value");
    if (t.rank() < 1) {
      return Status::InvalidArgument("output " + label +
                                     " is a scalar; a batched model's outputs need a batch dimension (dim 0)");
    }
    if (t.dim(0) != total) {
      return Status::InvalidArgument("output " + label + " has " + std::to_string(t.dim(0)) +
                                     " rows (dim 0 of " + ShapeToString(t.shape()) + "), but the batch has " +
                                     std::to_string(total));
    }
    const int64_t row_elems = RowElements(t.shape());
    if (row_elems < 0) return Status::InvalidArgument("output " + label + " has a bad shape " + ShapeToString(t.shape()));
    int64_t offset = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      Shape shape = t.shape();
      shape[0] = rows[r];
      IL_ASSIGN_OR_RETURN(Tensor part, Tensor::Create(t.dtype(), std::move(shape)));
      CopyElements(t, offset, part, 0, part.size());
      offset += part.size();
      out[r].push_back(std::move(part));
    }
  }
  return out;
}

int64_t BucketRows(int64_t rows, const std::vector<int64_t>& buckets) {
  for (int64_t b : buckets)
    if (b >= rows) return b;
  return rows;
}

std::vector<int64_t> BatchBuckets(int64_t max_batch_size, const std::vector<int>& preferred) {
  std::vector<int64_t> b;
  for (int64_t p = 1; p < max_batch_size; p *= 2) b.push_back(p);
  if (max_batch_size > 0) b.push_back(max_batch_size);
  for (int p : preferred)
    if (p > 0 && p <= max_batch_size) b.push_back(p);
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return b;
}

Result<Tensor> PadRows(const Tensor& t, int64_t rows) {
  if (t.rank() < 1 || t.dim(0) < 1) return Status::InvalidArgument("cannot pad " + ShapeToString(t.shape()) + " along dim 0");
  if (rows == t.dim(0)) return t;
  if (rows < t.dim(0))
    return Status::InvalidArgument("cannot pad " + ShapeToString(t.shape()) + " to fewer rows (" + std::to_string(rows) + ")");
  const int64_t row = RowElements(t.shape());
  if (row < 0) return Status::InvalidArgument("bad shape " + ShapeToString(t.shape()));
  Shape shape = t.shape();
  shape[0] = rows;
  IL_ASSIGN_OR_RETURN(Tensor padded, Tensor::Create(t.dtype(), std::move(shape)));
  CopyElements(t, 0, padded, 0, t.size());
  const int64_t last = (t.dim(0) - 1) * row;
  for (int64_t r = t.dim(0); r < rows; ++r) CopyElements(t, last, padded, r * row, row);
  return padded;
}

Result<AssembledBatch> AssembleBatchInputs(const std::vector<const InferRequest*>& requests,
                                           const std::vector<int64_t>& rows, const BatchInputLayout& layout) {
  AssembledBatch b;
  IL_RETURN_IF_ERROR(AssembleBatchInputsInto(requests, rows, layout, b));
  return b;
}

namespace {

Status AssembleInto(const std::vector<const InferRequest*>& requests, const std::vector<int64_t>& rows,
                    const BatchInputLayout& layout, AssembledBatch& b) {
  if (requests.empty() || requests.size() != rows.size())
    return Status::InvalidArgument("a batch needs requests and one row count each");
  b.model_batches = layout.model_batches;
  b.request_rows.assign(rows.begin(), rows.end());
  b.rows = 0;
  for (int64_t r : rows) b.rows += r;
  // Names are assigned into the strings already there (their capacity is reused).
  size_t fed = 0;
  auto feed_name = [&](const std::string& name) {
    if (fed < b.names.size()) {
      b.names[fed].assign(name);
    } else {
      b.names.push_back(name);
    }
    ++fed;
  };
  if (layout.model_batches && requests.size() > 1) {
    // Optional inputs: requests of one batch share a key, so they have the same inputs.
    for (const auto& name : layout.input_names)
      for (const auto& in : requests[0]->inputs)
        if (in.name == name) feed_name(name);
    b.names.resize(fed);
    IL_ASSIGN_OR_RETURN(b.inputs, GatherBatchInputs(requests, b.names));
  } else {
    b.inputs.clear();
    for (const auto& in : requests[0]->inputs) {
      feed_name(in.name);
      b.inputs.push_back(in.tensor);
    }
    b.names.resize(fed);
  }
  // Config reshape: feed the model's shape.
  if (!layout.reshapes.empty()) {
    for (size_t i = 0; i < b.inputs.size(); ++i) {
      auto it = layout.reshapes.find(b.names[i]);
      if (it == layout.reshapes.end()) continue;
      Shape r;
      if (layout.model_batches) r.push_back(b.inputs[i].dim(0));
      for (int64_t d : it->second) r.push_back(d);
      IL_ASSIGN_OR_RETURN(b.inputs[i], b.inputs[i].Reshaped(r));
    }
  }
  // Run at a bucketed batch size (padding with copies of the last row), so the model sees a
  // few shapes and keeps their kernels and plans cached.
  b.run_rows = layout.model_batches ? BucketRows(b.rows, layout.buckets) : b.rows;
  if (b.run_rows != b.rows) {
    for (Tensor& t : b.inputs) {
      IL_ASSIGN_OR_RETURN(t, PadRows(t, b.run_rows));
    }
  }
  return Status::Ok();
}

}  // namespace

Status AssembleBatchInputsInto(const std::vector<const InferRequest*>& requests, const std::vector<int64_t>& rows,
                               const BatchInputLayout& layout, AssembledBatch& b) {
  Status st = AssembleInto(requests, rows, layout, b);
  if (!st.ok()) b.Clear();
  return st;
}

Result<std::vector<std::vector<Tensor>>> SplitAssembledOutputs(const std::vector<Tensor>& outputs,
                                                               const AssembledBatch& batch,
                                                               const std::vector<std::string>& output_names) {
  std::vector<std::vector<Tensor>> per_request;
  IL_RETURN_IF_ERROR(SplitAssembledOutputsInto(outputs, batch, output_names, per_request));
  return per_request;
}

Status SplitAssembledOutputsInto(const std::vector<Tensor>& outputs, const AssembledBatch& batch,
                                 const std::vector<std::string>& output_names,
                                 std::vector<std::vector<Tensor>>& per_request) {
  if (!batch.model_batches || (batch.request_rows.size() <= 1 && batch.run_rows == batch.rows)) {
    per_request.resize(1);
    per_request[0].assign(outputs.begin(), outputs.end());  // shallow: shares the run's buffers
    return Status::Ok();
  }
  std::vector<int64_t> rows = batch.request_rows;
  if (batch.run_rows != batch.rows) rows.push_back(batch.run_rows - batch.rows);  // the padding's share
  auto split = SplitBatchOutputs(outputs, rows, output_names);
  if (!split.ok()) {
    per_request.clear();
    return split.status();
  }
  per_request = std::move(split).value();
  return Status::Ok();
}

}  // namespace inferloop::serve
