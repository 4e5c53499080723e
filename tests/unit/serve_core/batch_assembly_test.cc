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
