// The /v1/embeddings request parser and response writer (src/frontends/openai_embeddings.h).
#include "frontends/openai_embeddings.h"

#include <gtest/gtest.h>

#include <cstring>

namespace inferloop::frontends {
namespace {

OpenAiFieldError Refused(const char* body) {
  OpenAiEmbeddingsRequest r;
  OpenAiFieldError e;
  EXPECT_FALSE(ParseOpenAiEmbeddingsRequest(body, &r, &e)) << body;
  return e;
}

TEST(OpenAiEmbeddings, InputForms) {
  OpenAiEmbeddingsRequest r;
  OpenAiFieldError e;
  ASSERT_TRUE(ParseOpenAiEmbeddingsRequest(R"({"model":"m","input":"hi","encoding_format":"base64","dimensions":8,
                                              "user":"u"})", &r, &e)) << e.message;
  EXPECT_EQ(r.request.model, "m");
  ASSERT_EQ(r.request.inputs.size(), 1u);
  EXPECT_EQ(r.request.inputs[0].text, "hi");
  EXPECT_TRUE(r.base64);
  EXPECT_EQ(r.request.dimensions, 8);

  OpenAiEmbeddingsRequest s;
  ASSERT_TRUE(ParseOpenAiEmbeddingsRequest(R"({"model":"m","input":["a","b"]})", &s, &e));
  ASSERT_EQ(s.request.inputs.size(), 2u);
  EXPECT_EQ(s.request.inputs[1].text, "b");
  EXPECT_FALSE(s.base64);

  OpenAiEmbeddingsRequest t;
  ASSERT_TRUE(ParseOpenAiEmbeddingsRequest(R"({"model":"m","input":[1,2,3]})", &t, &e));
  ASSERT_EQ(t.request.inputs.size(), 1u);
  EXPECT_TRUE(t.request.inputs[0].is_tokens);
  EXPECT_EQ(t.request.inputs[0].tokens, (std::vector<int32_t>{1, 2, 3}));

  OpenAiEmbeddingsRequest u;
  ASSERT_TRUE(ParseOpenAiEmbeddingsRequest(R"({"model":"m","input":[[1],[2,3]]})", &u, &e));
  ASSERT_EQ(u.request.inputs.size(), 2u);
  EXPECT_EQ(u.request.inputs[1].tokens, (std::vector<int32_t>{2, 3}));
}

TEST(OpenAiEmbeddings, RefusalsNameTheField) {
  EXPECT_EQ(Refused("{").field, "");
  EXPECT_EQ(Refused(R"({"input":"x"})").field, "model");
  EXPECT_EQ(Refused(R"({"model":"m"})").field, "input");
  EXPECT_EQ(Refused(R"({"model":"m","input":[]})").field, "input");
  EXPECT_EQ(Refused(R"({"model":"m","input":""})").field, "input");
  EXPECT_EQ(Refused(R"({"model":"m","input":["a",""]})").field, "input");
  EXPECT_EQ(Refused(R"({"model":"m","input":["a",1]})").field, "input");
  EXPECT_EQ(Refused(R"({"model":"m","input":[[1],[]]})").field, "input");
  EXPECT_EQ(Refused(R"({"model":"m","input":[1,-2]})").field, "input");
  EXPECT_EQ(Refused(R"({"model":"m","input":5})").field, "input");
  EXPECT_EQ(Refused(R"({"model":"m","input":"x","encoding_format":"int8"})").field, "encoding_format");
  EXPECT_EQ(Refused(R"({"model":"m","input":"x","dimensions":0})").field, "dimensions");
  EXPECT_EQ(Refused(R"({"model":"m","input":"x","dimensions":1.5})").field, "dimensions");
  EXPECT_EQ(Refused(R"({"model":"m","input":"x","user":3})").field, "user");
  EXPECT_EQ(Refused(R"({"model":"m","input":"x","top_k":3})").field, "top_k");
  std::string many = R"({"model":"m","input":[)";
  for (int i = 0; i < 2049; ++i) many += std::string(i ? "," : "") + "\"a\"";
  EXPECT_EQ(Refused((many + "]}").c_str()).field, "input");
}

TEST(OpenAiEmbeddings, Base64IsLittleEndianFloat32) {
  // 1.0f = 00 00 80 3f; -2.0f = 00 00 00 c0: bytes 00 00 80 3f 00 00 00 c0.
  EXPECT_EQ(Float32Base64({1.0f, -2.0f}), "AACAPwAAAMA=");
  EXPECT_EQ(Float32Base64({1.0f}), "AACAPw==");
  EXPECT_EQ(Float32Base64({}), "");
  EXPECT_EQ(Float32Base64({1.0f, -2.0f, 0.5f}).size(), 16u);  // 12 bytes, no padding
}

TEST(OpenAiEmbeddings, ResponseShape) {
  serve::EmbeddingResult r;
  r.embeddings = {{0.5f, -0.25f}, {1.0f, 0.0f}};
  r.prompt_tokens = 7;
  EXPECT_EQ(OpenAiEmbeddingsJson(r, "m", false),
            R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.25]},)"
            R"({"object":"embedding","index":1,"embedding":[1.0,0.0]}],"model":"m",)"
            R"("usage":{"prompt_tokens":7,"total_tokens":7}})");
  EXPECT_NE(OpenAiEmbeddingsJson(r, "m", true).find(R"("embedding":"AAAAPwAAgL4=")"), std::string::npos);
}

}  // namespace
}  // namespace inferloop::frontends
