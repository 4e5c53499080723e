// TuningCache: entries per CPU, the file format, saving merged with what the file holds, bad
// lines ignored; and that autotuned kernels record their winners.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "compute/tuning_cache.h"
#include "unit/compute/kernels/dnnl_test_util.h"

namespace inferloop {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Restores the global cache's path and entries after a test.
class TuningCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_path_ = TuningCache::Global().path();
    dir_ = std::filesystem::temp_directory_path() / ("il_tuning_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                                     "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    TuningCache::Global().SetPath(saved_path_);
    std::filesystem::remove_all(dir_);
  }
  std::string saved_path_;
  std::filesystem::path dir_;
};

TEST_F(TuningCacheTest, StoresFindsAndSavesMergedFile) {
  TuningCache& c = TuningCache::Global();
  const std::string path = (dir_ / "tuning.tsv").string();
  {
    std::ofstream out(path);
    out << "Other CPU|avx2\tconv f32 x=1\tplain\n";            // another machine's entry: kept
    out << "garbage line without tabs\n";                      // ignored
    out << CpuModelKey() << "\tmm f32 a=1x2\tinner_product\n";  // ours: loaded
  }
  c.SetPath(path);
  ASSERT_TRUE(c.Find("mm f32 a=1x2").has_value());
  EXPECT_EQ(*c.Find("mm f32 a=1x2"), "inner_product");
  EXPECT_FALSE(c.Find("conv f32 x=1").has_value());  // not for this CPU

  c.Store("conv f32 x=2\tbad", "winograd");  // a tab in a key cannot break the format
  const std::string text = ReadFile(path);
  EXPECT_NE(text.find("Other CPU|avx2\tconv f32 x=1\tplain\n"), std::string::npos) << text;
  EXPECT_NE(text.find(CpuModelKey() + "\tconv f32 x=2 bad\twinograd\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("garbage"), std::string::npos) << text;

  // A fresh load of the file sees the entry.
  c.Clear();
  EXPECT_FALSE(c.Find("conv f32 x=2 bad").has_value());
  c.SetPath(path);
  ASSERT_TRUE(c.Find("conv f32 x=2 bad").has_value());
  EXPECT_EQ(*c.Find("conv f32 x=2 bad"), "winograd");
}

TEST_F(TuningCacheTest, MissingOrUnwritableFileOnlyLosesPersistence) {
  TuningCache& c = TuningCache::Global();
  c.SetPath((dir_ / "no_such_dir" / "tuning.tsv").string());
  c.Store("k", "v");
  ASSERT_TRUE(c.Find("k").has_value());
  EXPECT_EQ(*c.Find("k"), "v");
}

TEST_F(TuningCacheTest, CpuModelKeyNamesTheMachine) {
  const std::string& k = CpuModelKey();
  EXPECT_FALSE(k.empty());
  EXPECT_EQ(k.find('\t'), std::string::npos);
  EXPECT_NE(k.find('|'), std::string::npos);  // model|isa
}

// A Conv autotunes the first time its shape is seen and records the winner in the file.
TEST_F(TuningCacheTest, ConvRecordsItsWinner) {
  if (!AutotuneEnabled()) GTEST_SKIP() << "INFERLOOP_AUTOTUNE=0";
  TuningCache& c = TuningCache::Global();
  const std::string path = (dir_ / "conv.tsv").string();
  c.Clear();
  c.SetPath(path);
  dnnl_test::OneNode n;
  n.op = "Conv";
  n.inputs = {{"x", {1, 16, 12, 12}, dnnl_test::RandomValues(16 * 144, 1), false},
              {"w", {16, 16, 3, 3}, dnnl_test::RandomValues(16 * 16 * 9, 2), true}};
  n.attrs = [](onnxpb::NodeProto& p) { dnnl_test::IntsAttr(p, "pads", {1, 1, 1, 1}); };
  auto y = dnnl_test::RunNode(n, DataType::kFloat);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  const std::string text = ReadFile(path);
  EXPECT_NE(text.find("conv f32 x=1x16x12x12 w=16x16x3x3"), std::string::npos) << text;
  bool known = false;
  for (const char* impl : {"\tplain\n", "\tblocked16\n", "\tany\n", "\twinograd\n", "\tsmall_direct\n"}) known = known || text.find(impl) != std::string::npos;
  EXPECT_TRUE(known) << text;
}

// Once the process has spent its autotuning budget, new shapes take the heuristic: the result
// is still computed (and right), but nothing is timed or recorded. (Each test runs in its own
// process under ctest, so the spent budget does not leak into other tests.)
TEST_F(TuningCacheTest, SpentBudgetStopsAutotuning) {
  if (!AutotuneEnabled()) GTEST_SKIP() << "INFERLOOP_AUTOTUNE=0";
  TuningCache& c = TuningCache::Global();
  const std::string path = (dir_ / "budget.tsv").string();
  c.Clear();
  c.SetPath(path);
  ChargeAutotune(1e9);
  EXPECT_FALSE(AutotuneEnabled());
  dnnl_test::OneNode n;
  n.op = "Conv";
  n.inputs = {{"x", {1, 16, 10, 10}, dnnl_test::RandomValues(16 * 100, 3), false},
              {"w", {16, 16, 3, 3}, dnnl_test::RandomValues(16 * 16 * 9, 4), true}};
  n.attrs = [](onnxpb::NodeProto& p) { dnnl_test::IntsAttr(p, "pads", {1, 1, 1, 1}); };
  auto y = dnnl_test::RunNode(n, DataType::kFloat);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(ReadFile(path).find("conv f32 x=1x16x10x10"), std::string::npos);
}

}  // namespace
}  // namespace inferloop
