// Data sets of the quantizer (tools/quant_data.h): batches split along the batch dimension,
// labels.npy, sample folders, errors.
#include "tools/quant_data.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "base/npy.h"

namespace inferloop {
namespace {

namespace fs = std::filesystem;

class QuantData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("il_quant_data_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const fs::path& p, const Tensor& t) {
    fs::create_directories(p.parent_path());
    ASSERT_TRUE(WriteNpyFile(p.string(), t).ok());
  }
  static Tensor Rows(int64_t n, int64_t w) {
    std::vector<float> v(static_cast<size_t>(n * w));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
    return Tensor::FromVector<float>(DataType::kFloat, {n, w}, v);
  }
  static ValueInfo Input(const std::string& name, std::vector<Dim> shape) {
    ValueInfo vi;
    vi.name = name;
    vi.dtype = DataType::kFloat;
    vi.has_shape = true;
    vi.shape = std::move(shape);
    return vi;
  }
  fs::path dir_;
};

TEST_F(QuantData, BatchAlongSymbolicDimIsChunked) {
  Write(dir_ / "d" / "x.npy", Rows(20, 3));
  Write(dir_ / "d" / "labels.npy", Tensor::FromVector<int64_t>(DataType::kInt64, {20}, std::vector<int64_t>(20, 1)));
  auto ds = LoadQuantData((dir_ / "d").string(), {Input("x", {Dim{-1, "N"}, Dim{3, ""}})}, 8);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->rows, 20);
  ASSERT_EQ(ds->chunks.size(), 3u);  // 8 + 8 + 4
  ASSERT_EQ(ds->chunks[2].size(), 1u);  // labels are not an input
  const Tensor& last = ds->chunks[2][0].second.tensor();
  EXPECT_EQ(last.shape(), (Shape{4, 3}));
  EXPECT_EQ(last.data<float>()[0], 16 * 3);  // rows in order
  EXPECT_EQ(ds->labels.size(), 20u);
  auto one = FirstRow(ds->chunks[0], {Input("x", {Dim{-1, "N"}, Dim{3, ""}})});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)[0].second.tensor().shape(), (Shape{1, 3}));
}

TEST_F(QuantData, FixedBatchOfOneRunsRowByRow) {
  Write(dir_ / "d" / "x.npy", Rows(5, 3));
  auto ds = LoadQuantData((dir_ / "d").string(), {Input("x", {Dim{1, ""}, Dim{3, ""}})}, 8);
  ASSERT_TRUE(ds.ok());
  EXPECT_EQ(ds->chunks.size(), 5u);
  EXPECT_EQ(ds->rows, 5);
}

TEST_F(QuantData, SampleFoldersAndTheFingerprint) {
  Write(dir_ / "d" / "s0" / "x.npy", Rows(1, 3));
  Write(dir_ / "d" / "s1" / "x.npy", Rows(1, 3));
  Write(dir_ / "d" / "labels.npy", Tensor::FromVector<int64_t>(DataType::kInt64, {2}, {0, 1}));
  const std::vector<ValueInfo> in = {Input("x", {Dim{-1, "N"}, Dim{3, ""}})};
  auto a = LoadQuantData((dir_ / "d").string(), in);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->chunks.size(), 2u);
  EXPECT_EQ(a->labels, (std::vector<int64_t>{0, 1}));
  Write(dir_ / "d" / "s1" / "x.npy", Rows(2, 3));  // other data: another fingerprint
  Write(dir_ / "d" / "labels.npy", Tensor::FromVector<int64_t>(DataType::kInt64, {3}, {0, 1, 2}));
  auto b = LoadQuantData((dir_ / "d").string(), in);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_NE(a->fingerprint, b->fingerprint);
  EXPECT_EQ(b->rows, 3);
}

TEST_F(QuantData, Errors) {
  const std::vector<ValueInfo> in = {Input("x", {Dim{-1, "N"}, Dim{3, ""}})};
  EXPECT_FALSE(LoadQuantData((dir_ / "missing").string(), in).ok());
  fs::create_directories(dir_ / "empty");
  auto empty = LoadQuantData((dir_ / "empty").string(), in);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no .npy"), std::string::npos);
  Write(dir_ / "wrong" / "image.npy", Rows(2, 3));
  auto wrong = LoadQuantData((dir_ / "wrong").string(), in);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("no file for input x"), std::string::npos);
  Write(dir_ / "badlabels" / "x.npy", Rows(4, 3));
  Write(dir_ / "badlabels" / "labels.npy", Tensor::FromVector<int64_t>(DataType::kInt64, {3}, {0, 1, 2}));
  auto bad = LoadQuantData((dir_ / "badlabels").string(), in);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("3 labels for 4 samples"), std::string::npos);
}

}  // namespace
}  // namespace inferloop
