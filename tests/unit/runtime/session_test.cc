#include "inferloop/session.h"

#include <gtest/gtest.h>

#include <thread>

#include "unit/model_builder.h"

namespace inferloop {
namespace {

using testing::ModelBuilder;

std::string AddModel() {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {-1, 3}, {"batch"}).Input("y", DataType::kFloat, {-1, 3}, {"batch"});
  b.Output("z", DataType::kFloat, {-1, 3});
  b.Node("Add", {"x", "y"}, {"z"});
  return b.Bytes();
}

Tensor F32(Shape shape, std::vector<float> v) { return Tensor::FromVector<float>(DataType::kFloat, std::move(shape), v); }

std::unique_ptr<Session> MustCreate(const std::string& bytes) {
  auto s = Session::CreateFromBytes(bytes.data(), bytes.size());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

TEST(Session, RunsAndReportsSignature) {
  auto s = MustCreate(AddModel());
  ASSERT_TRUE(s);
  ASSERT_EQ(s->inputs().size(), 2u);
  EXPECT_EQ(s->inputs()[0].ToString(), "x: float32[batch,3]");
  auto r = s->Run({{"x", F32({1, 3}, {1, 2, 3})}, {"y", F32({1, 3}, {10, 20, 30})}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& z = (*r)[0].second.tensor();
  EXPECT_EQ(z.shape(), (Shape{1, 3}));
  EXPECT_EQ(z.data<float>()[2], 33.0f);
}

TEST(Session, TruncatedModelIsAClearError) {
  std::string bytes = AddModel();
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3, size_t{1}}) {
    auto s = Session::CreateFromBytes(bytes.data(), cut);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << s.status().ToString();
  }
}

TEST(Session, GarbageIsAClearError) {
  std::string junk(1000, '\xff');
  auto s = Session::CreateFromBytes(junk.data(), junk.size());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("not a valid ONNX model"), std::string::npos);
}

TEST(Session, MissingFileNamesThePath) {
  auto s = Session::CreateFromFile("/nonexistent/model.onnx");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("/nonexistent/model.onnx"), std::string::npos);
}

TEST(Session, UnknownOperatorNamesOpDomainAndOpset) {
  ModelBuilder b(13);
  b.Input("x", DataType::kFloat, {2}).Output("y", DataType::kFloat, {2});
  b.Node("FrobnicateV2", {"x"}, {"y"}).set_name("n1");
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented);
  const std::string& m = s.status().message();
  EXPECT_NE(m.find("FrobnicateV2"), std::string::npos) << m;
  EXPECT_NE(m.find("ai.onnx"), std::string::npos) << m;
  EXPECT_NE(m.find("opset 13"), std::string::npos) << m;
}

TEST(Session, UnimportedDomainIsAnError) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Output("y", DataType::kFloat, {2});
  b.Node("Thing", {"x"}, {"y"}, "com.example");
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("com.example"), std::string::npos);
}

TEST(Session, CyclicGraphIsRejected) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Output("c", DataType::kFloat, {2});
  b.Node("Add", {"x", "c"}, {"a"});
  b.Node("Add", {"a", "x"}, {"c"});
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cycle"), std::string::npos) << s.status().ToString();
}

TEST(Session, UndefinedValueIsRejected) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Output("y", DataType::kFloat, {2});
  b.Node("Add", {"x", "ghost"}, {"y"});
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'ghost'"), std::string::npos);
}

TEST(Session, MissingInput) {
  auto s = MustCreate(AddModel());
  auto r = s->Run({{"x", F32({1, 3}, {1, 2, 3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("missing required input 'y'"), std::string::npos) << r.status().ToString();
}

TEST(Session, ExtraInput) {
  auto s = MustCreate(AddModel());
  auto r = s->Run({{"x", F32({1, 3}, {1, 2, 3})}, {"y", F32({1, 3}, {1, 2, 3})}, {"w", F32({1}, {1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown input 'w'"), std::string::npos) << r.status().ToString();
}

TEST(Session, WrongDtypeNamesInputExpectedAndGot) {
  auto s = MustCreate(AddModel());
  auto r = s->Run({{"x", Tensor::FromVector<int32_t>(DataType::kInt32, {1, 3}, {1, 2, 3})}, {"y", F32({1, 3}, {1, 2, 3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 'x' expects dtype float32, got int32"), std::string::npos) << r.status().ToString();
}

TEST(Session, WrongRankAndShape) {
  auto s = MustCreate(AddModel());
  auto r = s->Run({{"x", F32({3}, {1, 2, 3})}, {"y", F32({1, 3}, {1, 2, 3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("expects rank 2"), std::string::npos) << r.status().ToString();
  r = s->Run({{"x", F32({1, 2}, {1, 2})}, {"y", F32({1, 3}, {1, 2, 3})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("dimension 1 must be 3"), std::string::npos) << r.status().ToString();
}

TEST(Session, SymbolicDimsMustAgree) {
  auto s = MustCreate(AddModel());
  auto r = s->Run({{"x", F32({1, 3}, {1, 2, 3})}, {"y", F32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'batch'"), std::string::npos) << r.status().ToString();
}

TEST(Session, InitializerThatIsAlsoAnInputCanBeOverridden) {
  ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Input("bias", DataType::kFloat, {2}).Output("y", DataType::kFloat, {2});
  b.Initializer("bias", F32({2}, {100, 200}));
  b.Node("Add", {"x", "bias"}, {"y"});
  auto s = MustCreate(b.Bytes());
  ASSERT_EQ(s->inputs().size(), 1u);  // bias has a default
  auto r = s->Run({{"x", F32({2}, {1, 2})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[1], 202.0f);
  r = s->Run({{"x", F32({2}, {1, 2})}, {"bias", F32({2}, {0, 0})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].second.tensor().data<float>()[1], 2.0f);
}

TEST(Session, HugeExpandIsRefusedBeforeAllocating) {
  ModelBuilder b(13);
  b.Input("x", DataType::kFloat, {1}).Output("y", DataType::kFloat, {-1});
  b.Initializer("shape", Tensor::FromVector<int64_t>(DataType::kInt64, {1}, {int64_t{1} << 40}));
  b.Node("Expand", {"x", "shape"}, {"y"});
  SessionOptions opts;
  opts.max_tensor_bytes = size_t{1} << 30;
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size(), opts);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto r = (*s)->Run({{"x", F32({1}, {1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  EXPECT_NE(r.status().message().find("Expand"), std::string::npos) << r.status().ToString();
}

TEST(Session, OverflowingExpandIsAnErrorNotACrash) {
  ModelBuilder b(13);
  b.Input("x", DataType::kFloat, {1}).Output("y", DataType::kFloat, {-1, -1});
  b.Initializer("shape", Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {int64_t{1} << 40, int64_t{1} << 40}));
  b.Node("Expand", {"x", "shape"}, {"y"});
  auto s = Session::CreateFromBytes(b.Bytes().data(), b.Bytes().size());
  ASSERT_TRUE(s.ok());
  auto r = (*s)->Run({{"x", F32({1}, {1})}});
  ASSERT_FALSE(r.ok());
}

TEST(Session, ConcurrentRunsOnOneSessionAgree) {
  auto s = MustCreate(AddModel());
  constexpr int kThreads = 8, kIters = 200;
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        float v = static_cast<float>(t * 1000 + i);
        auto r = s->Run({{"x", F32({1, 3}, {v, v, v})}, {"y", F32({1, 3}, {1, 2, 3})}});
        if (!r.ok() || (*r)[0].second.tensor().data<float>()[2] != v + 3) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace inferloop
