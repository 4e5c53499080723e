// GgufFile: metadata of every value type, tensors and their spans, the real stories260k model,
// and malformed files (truncation at every offset, bad magic, old versions, huge counts, offsets
// past the end, misalignment, duplicates): always a clear Status, never a crash.
#include "llm/gguf_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace inferloop::llm {
namespace {

const std::string kDataDir = std::string(INFERLOOP_SOURCE_DIR) + "/tests/data/llm/";

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Little-endian builder for hand-made (and deliberately broken) files.
struct Writer {
  std::vector<uint8_t> b;
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void Str(const std::string& s) { U64(s.size()); Raw(s.data(), s.size()); }
  void Raw(const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
  }
  void Header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    U32(0x46554747);
    U32(version);
    U64(tensors);
    U64(kvs);
  }
  void TensorInfo(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    Str(name);
    U32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) U64(d);
    U32(type);
    U64(offset);
  }
  void PadTo(size_t align) { b.resize((b.size() + align - 1) / align * align, 0); }
};

Status ParseStatus(const std::vector<uint8_t>& bytes) { return GgufFile::Parse(bytes).status(); }

TEST(GgufFile, MetadataOfEveryType) {
  auto f = GgufFile::Open(kDataDir + "metadata.gguf");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->tensors().size(), 0u);
  EXPECT_EQ(*f->GetString("general.architecture"), "testarch");
  EXPECT_EQ(*f->GetUint8("t.u8"), 200);
  EXPECT_EQ(*f->GetInt8("t.i8"), -100);
  EXPECT_EQ(*f->GetUint16("t.u16"), 60000);
  EXPECT_EQ(*f->GetInt16("t.i16"), -30000);
  EXPECT_EQ(*f->GetUint32("t.u32"), 4000000000u);
  EXPECT_EQ(*f->GetInt32("t.i32"), -2000000000);
  EXPECT_EQ(*f->GetFloat32("t.f32"), 1.5f);
  EXPECT_EQ(*f->GetUint64("t.u64"), 18000000000000000000ull);
  EXPECT_EQ(*f->GetInt64("t.i64"), -9000000000000000000ll);
  EXPECT_EQ(*f->GetFloat64("t.f64"), -2.25);
  EXPECT_TRUE(*f->GetBool("t.bool_true"));
  EXPECT_FALSE(*f->GetBool("t.bool_false"));
  EXPECT_EQ(*f->GetString("t.str"), "h\xc3\xa9llo \xe2\x9c\x93");
  EXPECT_EQ(*f->GetStringArray("t.arr_str"), (std::vector<std::string_view>{"a", "", "\xc3\xbcn\xc3\xaf", "<s>"}));
  EXPECT_EQ(*f->GetInt32Array("t.arr_i32"), (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(*f->GetUint32Array("t.arr_u32"), (std::vector<uint32_t>{7, 8}));
  EXPECT_EQ(*f->GetFloat32Array("t.arr_f32"), (std::vector<float>{0.5f, -1.0f, 3.25f}));
  const GgufValue* u8 = f->Find("t.arr_u8");
  ASSERT_NE(u8, nullptr);
  ASSERT_EQ(u8->elem_type, GgufValueType::kUint8);
  ASSERT_EQ(u8->count, 3u);
  double d = 0;
  ASSERT_TRUE(u8->ElementAsDouble(2, &d));
  EXPECT_EQ(d, 255);
  const GgufValue* bools = f->Find("t.arr_bool");
  ASSERT_NE(bools, nullptr);
  EXPECT_EQ(bools->elem_type, GgufValueType::kBool);
  ASSERT_TRUE(bools->ElementAsDouble(1, &d));
  EXPECT_EQ(d, 0);
  const GgufValue* nested = f->Find("t.arr_nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->elem_type, GgufValueType::kArray);
  ASSERT_EQ(nested->arrays.size(), 2u);
  EXPECT_EQ(nested->arrays[0].count, 2u);
  EXPECT_EQ(nested->arrays[1].count, 1u);
  ASSERT_TRUE(nested->arrays[1].ElementAsDouble(0, &d));
  EXPECT_EQ(d, 3);
  // Metadata keeps file order.
  EXPECT_EQ(f->metadata().front().first, "general.architecture");
  EXPECT_EQ(*f->GetUnsigned("t.u32"), 4000000000u);
}

TEST(GgufFile, TypedGetterErrorsNameKeyAndTypes) {
  auto f = GgufFile::Open(kDataDir + "metadata.gguf");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto missing = f->GetUint32("no.such.key");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "key 'no.such.key' missing");
  auto wrong = f->GetUint32("t.str");
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong.status().message(), "key 't.str' has type string, expected uint32");
  EXPECT_EQ(f->GetStringArray("t.arr_i32").status().message(),
            "key 't.arr_i32' has type array of int32, expected array of string");
  EXPECT_EQ(f->GetFloat32("t.arr_f32").status().message(), "key 't.arr_f32' has type array of float32, expected float32");
  EXPECT_EQ(f->GetUnsigned("t.i8").status().message(), "key 't.i8' is -100, expected a non-negative integer");
}

TEST(GgufFile, TensorsAreSpansIntoTheMapping) {
  auto f = GgufFile::Open(kDataDir + "tensors.gguf");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  ASSERT_EQ(f->tensors().size(), 7u);
  const GgufTensorInfo* q4k = f->FindTensor("w.q4_k");
  ASSERT_NE(q4k, nullptr);
  EXPECT_EQ(q4k->type, GgmlType::kQ4_K);
  EXPECT_EQ(q4k->dims, (std::vector<uint64_t>{512, 2}));
  EXPECT_EQ(q4k->elements, 1024u);
  EXPECT_EQ(q4k->bytes, 4u * 144);
  EXPECT_EQ(f->FindTensor("nope"), nullptr);
  for (const GgufTensorInfo& t : f->tensors()) {
    EXPECT_EQ(t.offset % 64, 0u) << t.name;
    EXPECT_EQ(t.data.size(), t.bytes);
  }
  // Spans stay valid after the GgufFile is moved (the mapping does not move).
  const uint8_t* before = q4k->data.data();
  GgufFile moved = std::move(f).value();
  EXPECT_EQ(moved.FindTensor("w.q4_k")->data.data(), before);
  EXPECT_EQ(moved.FindTensor("w.q4_k")->data[0], moved.FindTensor("w.q4_k")->data[0]);
}

TEST(GgufFile, DequantizedTensorsMatchGgufPython) {
  auto f = GgufFile::Open(kDataDir + "tensors.gguf");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const std::vector<uint8_t> expected_bytes = ReadBytes(kDataDir + "tensors_expected.bin");
  size_t pos = 0;
  for (const GgufTensorInfo& t : f->tensors()) {
    SCOPED_TRACE(std::string(t.name));
    std::vector<float> got(t.elements);
    // Row by row, as kernels will.
    const uint64_t row = t.dims[0];
    auto row_bytes = GgmlRowBytes(static_cast<uint32_t>(t.type), row);
    ASSERT_TRUE(row_bytes.ok());
    for (uint64_t r = 0; r < t.elements / row; ++r)
      ASSERT_TRUE(DequantizeRow(t.type, t.data.subspan(r * *row_bytes, *row_bytes),
                                std::span<float>(got).subspan(r * row, row)).ok());
    ASSERT_LE(pos + got.size() * 4, expected_bytes.size());
    std::vector<float> want(got.size());
    std::memcpy(want.data(), expected_bytes.data() + pos, got.size() * 4);
    pos += got.size() * 4;
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
  }
  EXPECT_EQ(pos, expected_bytes.size());
}

TEST(GgufFile, Stories260k) {
  const std::string path = INFERLOOP_STORIES260K_GGUF;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "test model not present: " << path << " (see shared/models/README.md)";
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->file_size(), 1185376u);
  EXPECT_EQ(*f->GetString("general.architecture"), "llama");
  EXPECT_EQ(*f->GetString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(*f->GetUint32("llama.embedding_length"), 64u);
  EXPECT_EQ(*f->GetUint32("llama.block_count"), 5u);
  EXPECT_EQ(*f->GetUint32("llama.attention.head_count"), 8u);
  EXPECT_EQ(*f->GetUint32("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(*f->GetUint32("llama.feed_forward_length"), 172u);
  EXPECT_EQ(*f->GetUint32("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(f->GetStringArray("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(f->GetFloat32Array("tokenizer.ggml.scores")->size(), 512u);
  ASSERT_EQ(f->tensors().size(), 48u);  // 3 + 9 per layer x 5
  auto dims = [&](const char* name) {
    const GgufTensorInfo* t = f->FindTensor(name);
    return t ? t->dims : std::vector<uint64_t>{};
  };
  EXPECT_EQ(dims("token_embd.weight"), (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(dims("output.weight"), (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(dims("output_norm.weight"), (std::vector<uint64_t>{64}));
  EXPECT_EQ(dims("blk.4.attn_k.weight"), (std::vector<uint64_t>{64, 32}));
  EXPECT_EQ(dims("blk.4.ffn_down.weight"), (std::vector<uint64_t>{172, 64}));
  uint64_t params = 0;
  for (const GgufTensorInfo& t : f->tensors()) {
    EXPECT_EQ(t.type, GgmlType::kF32) << t.name;
    params += t.elements;
  }
  EXPECT_GT(params, 250000u);
  EXPECT_LT(params, 300000u);
}

TEST(GgufFileCorrupt, TruncatedAtEveryOffsetIsAClearError) {
  for (const char* name : {"metadata.gguf", "tensors.gguf"}) {
    const std::vector<uint8_t> full = ReadBytes(kDataDir + name);
    ASSERT_FALSE(full.empty());
    auto good = GgufFile::Parse(full);
    ASSERT_TRUE(good.ok()) << good.status().ToString();
    // Everything up to the last tensor's data (or, with no tensors, the last non-padding byte)
    // is needed; padding after it is not.
    uint64_t end_of_data = full.size();
    if (!good->tensors().empty()) {
      end_of_data = good->data_offset() + good->tensors().back().offset + good->tensors().back().bytes;
    } else {
      while (end_of_data > 0 && full[end_of_data - 1] == 0) --end_of_data;
    }
    for (size_t n = 0; n < end_of_data; ++n) {
      std::vector<uint8_t> cut(full.begin(), full.begin() + n);
      Status st = ParseStatus(cut);
      ASSERT_FALSE(st.ok()) << name << " truncated to " << n << " bytes parsed";
      ASSERT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
      ASSERT_FALSE(st.message().empty());
    }
  }
}

TEST(GgufFileCorrupt, BadMagicAndVersions) {
  Writer w;
  w.Header(0, 0);
  std::vector<uint8_t> b = w.b;
  std::memcpy(b.data(), "GGML", 4);
  EXPECT_EQ(ParseStatus(b).message(), "not a GGUF file: magic is 'GGML', expected 'GGUF'");
  for (uint32_t v : {1u, 2u}) {
    Writer old;
    old.Header(0, 0, v);
    Status st = ParseStatus(old.b);
    EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
    EXPECT_NE(st.message().find("GGUF version " + std::to_string(v) + " is not supported (only version 3)"),
              std::string::npos)
        << st.message();
  }
  Writer future;
  future.Header(0, 0, 4);
  EXPECT_NE(ParseStatus(future.b).message().find("unknown GGUF version 4"), std::string::npos);
  EXPECT_TRUE(ParseStatus(Writer{}.b).message().find("too short") != std::string::npos);
  EXPECT_EQ(GgufFile::Open("/nonexistent/x.gguf").status().code(), StatusCode::kNotFound);
  Status dir = GgufFile::Open(kDataDir).status();
  EXPECT_NE(dir.message().find("is not a regular file"), std::string::npos) << dir.message();
  const std::string empty = testing::TempDir() + "/empty.gguf";
  std::ofstream(empty).close();
  Status st = GgufFile::Open(empty).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find(empty + ": malformed GGUF at byte 0: file is 0 bytes, too short for a GGUF header"), std::string::npos) << st.message();
}

TEST(GgufFileCorrupt, HugeCountsAreRejectedBeforeAllocating) {
  Writer w;
  w.Header(UINT64_MAX, 0);
  EXPECT_NE(ParseStatus(w.b).message().find("tensor count 18446744073709551615 cannot fit"), std::string::npos)
      << ParseStatus(w.b).message();
  Writer k;
  k.Header(0, 1ull << 60);
  EXPECT_NE(ParseStatus(k.b).message().find("key/value count"), std::string::npos);
  Writer s;  // a key whose length is huge
  s.Header(0, 1);
  s.U64(UINT64_MAX);
  s.U64(0);
  EXPECT_NE(ParseStatus(s.b).message().find("truncated"), std::string::npos) << ParseStatus(s.b).message();
  for (uint32_t elem : {0u, 8u, 9u}) {  // uint8, string, array elements
    Writer a;
    a.Header(0, 1);
    a.Str("arr");
    a.U32(9);
    a.U32(elem);
    a.U64(UINT64_MAX / 2);
    a.U64(0);
    Status st = ParseStatus(a.b);
    EXPECT_NE(st.message().find("cannot fit"), std::string::npos) << st.message();
  }
  Writer dims;  // element count overflow
  dims.Header(1, 0);
  dims.TensorInfo("t", {1ull << 40, 1ull << 40}, 0, 0);
  EXPECT_NE(ParseStatus(dims.b).message().find("overflows"), std::string::npos) << ParseStatus(dims.b).message();
  Writer many_dims;
  many_dims.Header(1, 0);
  many_dims.TensorInfo("t", {1, 1, 1, 1, 1}, 0, 0);
  EXPECT_NE(ParseStatus(many_dims.b).message().find("5 dimensions (at most 4)"), std::string::npos);
}

// One F32 tensor of 8 elements at `offset` with `data_bytes` bytes of data present.
std::vector<uint8_t> OneTensorFile(uint64_t offset, size_t data_bytes, uint32_t type = 0,
                                   std::vector<uint64_t> dims = {8}) {
  Writer w;
  w.Header(1, 0);
  w.TensorInfo("t", std::move(dims), type, offset);
  w.PadTo(32);
  w.b.resize(w.b.size() + data_bytes, 0);
  return w.b;
}

TEST(GgufFileCorrupt, OffsetsAndSizes) {
  EXPECT_TRUE(GgufFile::Parse(OneTensorFile(0, 32)).ok());
  Status past = ParseStatus(OneTensorFile(32, 32));
  EXPECT_NE(past.message().find("tensor 't' (32 bytes at data offset 32) extends past the end"), std::string::npos)
      << past.message();
  EXPECT_FALSE(ParseStatus(OneTensorFile(0, 31)).ok());
  EXPECT_FALSE(ParseStatus(OneTensorFile(UINT64_MAX - 31, 32)).ok());  // offset + size overflows
  Status mis = ParseStatus(OneTensorFile(8, 64));
  EXPECT_NE(mis.message().find("offset 8 is not a multiple of the alignment 32"), std::string::npos) << mis.message();
  Status unknown = ParseStatus(OneTensorFile(0, 32, 77));
  EXPECT_NE(unknown.message().find("unknown ggml type id 77"), std::string::npos) << unknown.message();
  Status rows = ParseStatus(OneTensorFile(0, 64, 8, {40}));  // Q8_0 rows must be multiples of 32
  EXPECT_NE(rows.message().find("not a multiple of the block size 32"), std::string::npos) << rows.message();
  // An unsupported-for-compute but known type parses (sizes checked); dequantizing says which.
  auto q5k = GgufFile::Parse(OneTensorFile(0, 176, 13, {256}));
  ASSERT_TRUE(q5k.ok()) << q5k.status().ToString();
  std::vector<float> out(256);
  Status st = DequantizeRow(q5k->tensors()[0].type, q5k->tensors()[0].data, out);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_NE(st.message().find("Q5_K"), std::string::npos);
}

TEST(GgufFileCorrupt, DuplicatesAndBadAlignment) {
  Writer t;
  t.Header(2, 0);
  t.TensorInfo("a", {8}, 0, 0);
  t.TensorInfo("a", {8}, 0, 32);
  t.PadTo(32);
  t.b.resize(t.b.size() + 64);
  EXPECT_NE(ParseStatus(t.b).message().find("duplicate tensor name 'a'"), std::string::npos);
  Writer k;
  k.Header(0, 2);
  for (int i = 0; i < 2; ++i) {
    k.Str("x");
    k.U32(4);
    k.U32(1);
  }
  EXPECT_NE(ParseStatus(k.b).message().find("duplicate metadata key 'x'"), std::string::npos);
  for (uint32_t align : {0u, 48u}) {
    Writer a;
    a.Header(0, 1);
    a.Str("general.alignment");
    a.U32(4);
    a.U32(align);
    EXPECT_NE(ParseStatus(a.b).message().find("is not a power of two"), std::string::npos);
  }
  Writer a;
  a.Header(0, 1);
  a.Str("general.alignment");
  a.U32(8);
  a.Str("32");
  EXPECT_EQ(ParseStatus(a.b).message(), "key 'general.alignment' has type string, expected uint32");
  Writer vt;
  vt.Header(0, 1);
  vt.Str("k");
  vt.U32(13);
  EXPECT_NE(ParseStatus(vt.b).message().find("unknown value type 13"), std::string::npos);
}

TEST(GgufFileCorrupt, RandomByteFlipsNeverCrash) {
  const std::vector<uint8_t> full = ReadBytes(kDataDir + "tensors.gguf");
  uint32_t seed = 12345;
  int errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> b = full;
    for (int k = 0; k < 4; ++k) {
      seed = seed * 1664525u + 1013904223u;
      const size_t at = (seed >> 8) % std::min<size_t>(b.size(), 700);  // header + infos
      seed = seed * 1664525u + 1013904223u;
      b[at] = static_cast<uint8_t>(seed >> 24);
    }
    auto f = GgufFile::Parse(b);
    if (!f.ok()) {
      ++errors;
      EXPECT_FALSE(f.status().message().empty());
    }
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace inferloop::llm
