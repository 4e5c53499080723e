// Batch assembly (src/serve/batch_assembly.h): gather/split round trips for every kind of
// element storage, and the errors.
#include "serve/batch_assembly.h"

#include <gtest/gtest.h>

#include <memory>

#include "serve/dynamic_batcher.h"

namespace inferloop::serve {
namespace {

InferRequest Request(std::vector<std::pair<std::string, Tensor>> inputs) {
  InferRequest r;
  for (auto& [name, t] : inputs) r.inputs.push_back({name, std::move(t), {}});
  return r;
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.size());
}

std::vector<std::string> Strings(const Tensor& t) {
  return std::vector<std::string>(t.strings(), t.strings() + t.size());
}

TEST(BatchAssemblyTest, GatherAndSplitFloat) {
  InferRequest a = Request({{"x", Tensor::FromVector<float>(DataType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6})}});
  InferRequest b = Request({{"x", Tensor::FromVector<float>(DataType::kFloat, {1, 3}, {7, 8, 9})}});
  auto g = GatherBatchInputs({&a, &b}, {"x"});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 1u);
  const Tensor& x = (*g)[0];
  EXPECT_EQ(x.dtype(), DataType::kFloat);
  EXPECT_EQ(x.shape(), Shape({3, 3}));
  EXPECT_EQ(Values<float>(x), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}));

  auto s = SplitBatchOutputs({x}, {2, 1}, {"y"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0][0].shape(), Shape({2, 3}));
  EXPECT_EQ(Values<float>((*s)[0][0]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ((*s)[1][0].shape(), Shape({1, 3}));
  EXPECT_EQ(Values<float>((*s)[1][0]), (std::vector<float>{7, 8, 9}));
}

TEST(BatchAssemblyTest, GatherAndSplitInt64AndBoolSeveralInputs) {
  InferRequest a = Request({{"ids", Tensor::FromVector<int64_t>(DataType::kInt64, {1, 2}, {10, 11})},
                            {"mask", Tensor::FromVector<uint8_t>(DataType::kBool, {1}, {1})}});
  InferRequest b = Request({{"mask", Tensor::FromVector<uint8_t>(DataType::kBool, {2}, {0, 1})},
                            {"ids", Tensor::FromVector<int64_t>(DataType::kInt64, {2, 2}, {20, 21, 30, 31})}});
  InferRequest c = Request({{"ids", Tensor::FromVector<int64_t>(DataType::kInt64, {1, 2}, {40, 41})},
                            {"mask", Tensor::FromVector<uint8_t>(DataType::kBool, {1}, {0})}});
  auto g = GatherBatchInputs({&a, &b, &c}, {"ids", "mask"});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].shape(), Shape({4, 2}));
  EXPECT_EQ(Values<int64_t>((*g)[0]), (std::vector<int64_t>{10, 11, 20, 21, 30, 31, 40, 41}));
  EXPECT_EQ((*g)[1].dtype(), DataType::kBool);
  EXPECT_EQ(Values<uint8_t>((*g)[1]), (std::vector<uint8_t>{1, 0, 1, 0}));

  auto s = SplitBatchOutputs(*g, {1, 2, 1});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ(Values<int64_t>((*s)[1][0]), (std::vector<int64_t>{20, 21, 30, 31}));
  EXPECT_EQ(Values<uint8_t>((*s)[1][1]), (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(Values<int64_t>((*s)[2][0]), (std::vector<int64_t>{40, 41}));
  EXPECT_EQ((*s)[2][1].shape(), Shape({1}));
}

TEST(BatchAssemblyTest, GatherAndSplitBytes) {
  InferRequest a = Request({{"text", Tensor::FromStrings({2}, {"hello", std::string("\0bin\xff", 5)})}});
  InferRequest b = Request({{"text", Tensor::FromStrings({1}, {""})}});
  auto g = GatherBatchInputs({&a, &b}, {"text"});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const Tensor& t = (*g)[0];
  EXPECT_EQ(t.dtype(), DataType::kString);
  EXPECT_EQ(Strings(t), (std::vector<std::string>{"hello", std::string("\0bin\xff", 5), ""}));
  auto s = SplitBatchOutputs({t}, {2, 1}, {"out"});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Strings((*s)[0][0]), (std::vector<std::string>{"hello", std::string("\0bin\xff", 5)}));
  EXPECT_EQ(Strings((*s)[1][0]), (std::vector<std::string>{""}));
  // The split copies strings: the batch tensor can go away.
  g = Status::Internal("dropped");
  EXPECT_EQ((*s)[0][0].strings()[0], "hello");
}

TEST(BatchAssemblyTest, SingleRequestSharesBuffers) {
  Tensor x = Tensor::FromVector<float>(DataType::kFloat, {}, {3.5f});  // a scalar: fine for one request
  InferRequest a = Request({{"x", x}});
  auto g = GatherBatchInputs({&a}, {"x"});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ((*g)[0].raw_data(), x.raw_data());
  auto s = SplitBatchOutputs(*g, {1});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)[0][0].raw_data(), x.raw_data());
}

TEST(BatchAssemblyTest, GatherFromADynamicBatcherBatch) {
  Batch batch;
  for (int i = 0; i < 2; ++i) {
    auto p = std::make_unique<PendingRequest>();
    p->request = Request({{"x", Tensor::FromVector<int32_t>(DataType::kInt32, {1, 1}, {i})}});
    batch.requests.push_back(std::move(p));
  }
  auto g = GatherBatchInputs(batch, {"x"});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(Values<int32_t>((*g)[0]), (std::vector<int32_t>{0, 1}));
}

TEST(BatchAssemblyTest, GatherErrors) {
  InferRequest f = Request({{"x", Tensor::FromVector<float>(DataType::kFloat, {1, 3}, {1, 2, 3})}});
  InferRequest other_dtype = Request({{"x", Tensor::FromVector<int32_t>(DataType::kInt32, {1, 3}, {1, 2, 3})}});
  InferRequest other_dims = Request({{"x", Tensor::FromVector<float>(DataType::kFloat, {1, 2}, {1, 2})}});
  InferRequest scalar = Request({{"x", Tensor::FromVector<float>(DataType::kFloat, {}, {1})}});
  InferRequest missing = Request({{"y", Tensor::FromVector<float>(DataType::kFloat, {1, 3}, {1, 2, 3})}});

  auto r = GatherBatchInputs({&f, &other_dtype}, {"x"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'x'"), std::string::npos) << r.status().message();

  r = GatherBatchInputs({&f, &other_dims}, {"x"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);

  r = GatherBatchInputs({&f, &scalar}, {"x"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);

  r = GatherBatchInputs({&f, &missing}, {"x"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("no input 'x'"), std::string::npos) << r.status().message();

  r = GatherBatchInputs(std::vector<const InferRequest*>{}, {"x"});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(BatchAssemblyTest, SplitErrors) {
  Tensor t = Tensor::FromVector<float>(DataType::kFloat, {3, 2}, {1, 2, 3, 4, 5, 6});
  auto r = SplitBatchOutputs({t}, {1, 1}, {"probs"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'probs' has 3 rows"), std::string::npos) << r.status().message();

  r = SplitBatchOutputs({t}, {2, 2});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("#0"), std::string::npos) << r.status().message();

  r = SplitBatchOutputs({Tensor::Scalar(1.0f)}, {1, 1});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = SplitBatchOutputs({t}, {4, -1});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = SplitBatchOutputs({t}, {});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(BatchAssemblyTest, SplitZeroRowRequest) {
  Tensor t = Tensor::FromVector<float>(DataType::kFloat, {2, 1}, {1, 2});
  auto r = SplitBatchOutputs({t}, {0, 2});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0][0].shape(), Shape({0, 1}));
  EXPECT_EQ(Values<float>((*r)[1][0]), (std::vector<float>{1, 2}));
}

TEST(BatchAssemblyTest, BatchShapeOfABatchingModel) {
  InferRequest r = Request({{"b", Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {1, 2})},
                            {"a", Tensor::FromVector<float>(DataType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6})}});
  auto s = ComputeBatchShape(r, {"a", "b"}, true);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->rows, 2);
  EXPECT_FALSE(s->batch_key.empty());

  // Same non-batch dims and dtypes, different rows: same key.
  InferRequest r2 = Request({{"a", Tensor::FromVector<float>(DataType::kFloat, {1, 3}, {1, 2, 3})},
                             {"b", Tensor::FromVector<int64_t>(DataType::kInt64, {1}, {1})}});
  auto s2 = ComputeBatchShape(r2, {"a", "b"}, true);
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->rows, 1);
  EXPECT_EQ(s2->batch_key, s->batch_key);

  // Other non-batch dims, or another dtype: another key.
  InferRequest r3 = Request({{"a", Tensor::FromVector<float>(DataType::kFloat, {1, 2}, {1, 2})},
                             {"b", Tensor::FromVector<int64_t>(DataType::kInt64, {1}, {1})}});
  auto s3 = ComputeBatchShape(r3, {"a", "b"}, true);
  ASSERT_TRUE(s3.ok());
  EXPECT_NE(s3->batch_key, s->batch_key);
  InferRequest r4 = Request({{"a", Tensor::FromVector<double>(DataType::kDouble, {1, 3}, {1, 2, 3})},
                             {"b", Tensor::FromVector<int64_t>(DataType::kInt64, {1}, {1})}});
  auto s4 = ComputeBatchShape(r4, {"a", "b"}, true);
  ASSERT_TRUE(s4.ok());
  EXPECT_NE(s4->batch_key, s->batch_key);
}

TEST(BatchAssemblyTest, BatchShapeErrors) {
  InferRequest mismatch = Request({{"a", Tensor::FromVector<float>(DataType::kFloat, {2, 1}, {1, 2})},
                                   {"b", Tensor::FromVector<float>(DataType::kFloat, {3}, {1, 2, 3})}});
  auto s = ComputeBatchShape(mismatch, {"a", "b"}, true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("'a' has 2"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("'b' has 3"), std::string::npos) << s.status().message();

  InferRequest scalar = Request({{"a", Tensor::Scalar(1.0f)}});
  s = ComputeBatchShape(scalar, {"a"}, true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'a'"), std::string::npos) << s.status().message();

  InferRequest empty = Request({{"a", Tensor::FromVector<float>(DataType::kFloat, {0, 2}, {})}});
  s = ComputeBatchShape(empty, {"a"}, true);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);

  s = ComputeBatchShape(scalar, {"missing"}, true);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'missing'"), std::string::npos) << s.status().message();
}

TEST(BatchAssemblyTest, BatchShapeOfANonBatchingModel) {
  InferRequest scalar = Request({{"a", Tensor::Scalar(1.0f)}});
  auto s = ComputeBatchShape(scalar, {"a", "not_checked"}, false);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->rows, 1);
  EXPECT_TRUE(s->batch_key.empty());
}

}  // namespace
}  // namespace inferloop::serve

namespace inferloop::serve {
namespace {

TEST(BatchBucketsTest, PowersOfTwoPreferredSizesAndTheMaximum) {
  EXPECT_EQ(BatchBuckets(64, {}), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(BatchBuckets(12, {6, 12, 40}), (std::vector<int64_t>{1, 2, 4, 6, 8, 12}));
  EXPECT_EQ(BatchBuckets(1, {}), (std::vector<int64_t>{1}));
  EXPECT_TRUE(BatchBuckets(0, {}).empty());
  const auto b = BatchBuckets(12, {6});
  EXPECT_EQ(BucketRows(1, b), 1);
  EXPECT_EQ(BucketRows(3, b), 4);
  EXPECT_EQ(BucketRows(5, b), 6);
  EXPECT_EQ(BucketRows(7, b), 8);
  EXPECT_EQ(BucketRows(9, b), 12);
  EXPECT_EQ(BucketRows(13, b), 13);  // beyond every bucket: as is
}

TEST(PadRowsTest, RepeatsTheLastRowForEveryDtype) {
  auto f = Tensor::FromVector<float>(DataType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto padded = PadRows(f, 4);
  ASSERT_TRUE(padded.ok());
  EXPECT_EQ(padded->shape(), (Shape{4, 3}));
  const float* p = padded->data<float>();
  EXPECT_EQ(std::vector<float>(p, p + 12), (std::vector<float>{1, 2, 3, 4, 5, 6, 4, 5, 6, 4, 5, 6}));
  auto s = Tensor::FromStrings({1, 2}, {"a", "bc"});
  auto ps = PadRows(s, 3);
  ASSERT_TRUE(ps.ok());
  EXPECT_EQ(std::vector<std::string>(ps->strings(), ps->strings() + 6),
            (std::vector<std::string>{"a", "bc", "a", "bc", "a", "bc"}));
  auto same = PadRows(f, 2);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->raw_data(), f.raw_data());  // no copy when nothing to pad
}

TEST(PadRowsTest, Errors) {
  auto f = Tensor::FromVector<float>(DataType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(PadRows(f, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PadRows(Tensor::Scalar(1.f), 2).status().code(), StatusCode::kInvalidArgument);
  auto empty = Tensor::Create(DataType::kFloat, {0, 3});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(PadRows(*empty, 2).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace inferloop::serve

namespace inferloop::serve {
namespace {

BatchInputLayout BatchingLayout() {
  BatchInputLayout layout;
  layout.model_batches = true;
  layout.input_names = {"a_rather_long_input_name_past_small_string_storage", "b"};
  layout.buckets = BatchBuckets(8, {});
  return layout;
}

// The Into forms give what the Result forms give, batch after batch through one AssembledBatch and
// one per-request vector (more requests, then fewer, then a failing batch, then one again), and
// keep no tensor of a batch once asked to Clear() or after an error.
TEST(AssembleIntoTest, ReusedScratchGivesTheSameBatchesAndLetsGoOfTensors) {
  const BatchInputLayout layout = BatchingLayout();
  const std::string& a = layout.input_names[0];
  auto req = [&](float base, int64_t rows) {
    std::vector<float> va, vb;
    for (int64_t r = 0; r < rows; ++r) {
      va.insert(va.end(), {base + r, base + r + 0.5f});
      vb.push_back(-base - r);
    }
    return Request({{a, Tensor::FromVector<float>(DataType::kFloat, {rows, 2}, va)},
                    {"b", Tensor::FromVector<float>(DataType::kFloat, {rows, 1}, vb)}});
  };
  const InferRequest r1 = req(1, 1), r2 = req(10, 2), r3 = req(100, 3);
  AssembledBatch scratch;
  std::vector<std::vector<Tensor>> per_request;
  const std::vector<std::vector<const InferRequest*>> groups = {{&r1, &r2, &r3}, {&r2}, {&r3, &r1}, {&r1}};
  for (const auto& group : groups) {
    std::vector<int64_t> rows;
    for (const InferRequest* r : group) rows.push_back(r->inputs[0].tensor.dim(0));
    auto expected = AssembleBatchInputs(group, rows, layout);
    ASSERT_TRUE(expected.ok()) << expected.status().ToString();
    ASSERT_TRUE(AssembleBatchInputsInto(group, rows, layout, scratch).ok());
    EXPECT_EQ(scratch.names, expected->names);
    EXPECT_EQ(scratch.request_rows, expected->request_rows);
    EXPECT_EQ(scratch.rows, expected->rows);
    EXPECT_EQ(scratch.run_rows, expected->run_rows);
    ASSERT_EQ(scratch.inputs.size(), expected->inputs.size());
    for (size_t i = 0; i < scratch.inputs.size(); ++i) {
      EXPECT_EQ(scratch.inputs[i].shape(), expected->inputs[i].shape());
      EXPECT_EQ(Values<float>(scratch.inputs[i]), Values<float>(expected->inputs[i]));
    }
    // The model's outputs: its inputs as they are; split back, each request gets its own rows.
    auto want = SplitAssembledOutputs(scratch.inputs, *expected, {"x", "y"});
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ASSERT_TRUE(SplitAssembledOutputsInto(scratch.inputs, scratch, {"x", "y"}, per_request).ok());
    ASSERT_EQ(per_request.size(), want->size());  // a padded batch's padding rows come last
    ASSERT_GE(per_request.size(), group.size());
    for (size_t k = 0; k < group.size(); ++k) {
      ASSERT_EQ(per_request[k].size(), 2u);
      for (size_t j = 0; j < 2; ++j) {
        EXPECT_EQ(Values<float>(per_request[k][j]), Values<float>((*want)[k][j]));
        EXPECT_EQ(Values<float>(per_request[k][j]), Values<float>(group[k]->inputs[j].tensor));  // round trip
      }
    }
    scratch.Clear();
    EXPECT_TRUE(scratch.inputs.empty());
    for (auto& v : per_request) v.clear();  // as a caller keeping it does once answered
  }
  // One request shares its tensors; Clear() lets go of them.
  ASSERT_TRUE(AssembleBatchInputsInto({&r2}, {2}, layout, scratch).ok());
  EXPECT_EQ(scratch.inputs[0].raw_data(), r2.inputs[0].tensor.raw_data());
  EXPECT_EQ(r2.inputs[0].tensor.buffer_use_count(), 2);
  scratch.Clear();
  EXPECT_EQ(r2.inputs[0].tensor.buffer_use_count(), 1);
  // A failing batch (dims[1:] differ) leaves no tensor behind, and the next batch is right.
  const InferRequest odd = Request({{a, Tensor::FromVector<float>(DataType::kFloat, {1, 3}, {1, 2, 3})},
                                    {"b", Tensor::FromVector<float>(DataType::kFloat, {1, 1}, {4})}});
  ASSERT_TRUE(AssembleBatchInputsInto({&r1}, {1}, layout, scratch).ok());
  Status st = AssembleBatchInputsInto({&r1, &odd}, {1, 1}, layout, scratch);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(scratch.inputs.empty());
  EXPECT_EQ(r1.inputs[0].tensor.buffer_use_count(), 1);
  EXPECT_EQ(AssembleBatchInputsInto({}, {}, layout, scratch).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(AssembleBatchInputsInto({&r3}, {3}, layout, scratch).ok());
  EXPECT_EQ(scratch.rows, 3);
  EXPECT_EQ(scratch.run_rows, 4);  // padded to the bucket
  EXPECT_EQ(Values<float>(scratch.inputs[1]), (std::vector<float>{-100, -101, -102, -102}));
  // A split that fails (an output with the wrong row count) leaves no tensor either.
  std::vector<Tensor> wrong = {Tensor::FromVector<float>(DataType::kFloat, {3}, {1, 2, 3})};
  EXPECT_EQ(SplitAssembledOutputsInto(wrong, scratch, {"x"}, per_request).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(per_request.empty());
}

}  // namespace
}  // namespace inferloop::serve
