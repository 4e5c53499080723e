#include "inferloop/inferloop_c.h"

#include <gtest/gtest.h>

#include "unit/model_builder.h"

namespace inferloop {

extern "C" int inferloop_c_api_compile_check(void);  // tests/unit/runtime/c_api_check.c

TEST(CApi, HeaderCompilesAsC) { EXPECT_EQ(inferloop_c_api_compile_check(), 0); }

TEST(CApi, CreateRunDestroy) {
  testing::ModelBuilder b;
  b.Input("x", DataType::kFloat, {2}).Input("y", DataType::kFloat, {2}).Output("z", DataType::kFloat, {2});
  b.Node("Add", {"x", "y"}, {"z"});
  std::string bytes = b.Bytes();
  char* err = nullptr;
  il_session* s = il_session_create_from_bytes(bytes.data(), bytes.size(), &err);
  ASSERT_NE(s, nullptr) << err;
  ASSERT_EQ(il_session_input_count(s), 2u);
  EXPECT_STREQ(il_session_input_name(s, 1), "y");
  EXPECT_EQ(il_session_input_dtype(s, 0), IL_FLOAT);
  EXPECT_EQ(il_session_input_rank(s, 0), 1);
  EXPECT_EQ(il_session_input_dim(s, 0, 0), 2);
  EXPECT_EQ(il_session_input_name(s, 5), nullptr);
  float xv[2] = {1, 2}, yv[2] = {3, 4};
  int64_t shape[1] = {2};
  il_tensor* x = il_tensor_create(IL_FLOAT, shape, 1, xv, sizeof xv, &err);
  il_tensor* y = il_tensor_create(IL_FLOAT, shape, 1, yv, sizeof yv, &err);
  ASSERT_TRUE(x && y);
  const char* names[2] = {"x", "y"};
  const il_tensor* ins[2] = {x, y};
  il_tensor* outs[1] = {nullptr};
  ASSERT_EQ(il_session_run(s, names, ins, 2, outs, &err), 0) << err;
  ASSERT_NE(outs[0], nullptr);
  EXPECT_EQ(il_tensor_rank(outs[0]), 1u);
  EXPECT_EQ(static_cast<const float*>(il_tensor_data(outs[0]))[1], 6.0f);
  il_tensor_destroy(outs[0]);
  // Wrong dtype: a clear error, not a crash.
  int32_t iv[2] = {1, 2};
  il_tensor* bad = il_tensor_create(IL_INT32, shape, 1, iv, sizeof iv, &err);
  const il_tensor* bad_ins[2] = {bad, y};
  EXPECT_NE(il_session_run(s, names, bad_ins, 2, outs, &err), 0);
  ASSERT_NE(err, nullptr);
  EXPECT_NE(std::string(err).find("expects dtype float32"), std::string::npos) << err;
  il_free_string(err);
  err = nullptr;
  // Size mismatch at tensor creation.
  EXPECT_EQ(il_tensor_create(IL_FLOAT, shape, 1, xv, 3, &err), nullptr);
  il_free_string(err);
  il_tensor_destroy(bad);
  il_tensor_destroy(x);
  il_tensor_destroy(y);
  il_session_destroy(s);
}

TEST(CApi, BadModelGivesError) {
  char* err = nullptr;
  EXPECT_EQ(il_session_create_from_bytes("junk", 4, &err), nullptr);
  ASSERT_NE(err, nullptr);
  il_free_string(err);
  EXPECT_EQ(il_session_create_from_file(nullptr, nullptr), nullptr);
}

}  // namespace inferloop
