// ParseOpenAiRequest: accepted fields land in the generation request; everything the server does
// not support is refused naming the field.
#include "frontends/openai_request.h"

#include <gtest/gtest.h>

namespace inferloop::frontends {
namespace {

OpenAiFieldError Refused(const std::string& body, bool chat = false) {
  OpenAiRequest r;
  OpenAiFieldError e;
  EXPECT_FALSE(ParseOpenAiRequest(body, chat, &r, &e)) << body;
  return e;
}

TEST(OpenAiRequest, CompletionFields) {
  OpenAiRequest r;
  OpenAiFieldError e;
  ASSERT_TRUE(ParseOpenAiRequest(
      R"({"model":"m","prompt":["hi"],"max_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":-1,"seed":3,"n":2,
          "stop":"\n","logprobs":2,"stream":true,"stream_options":{"include_usage":true},"user":"u",
          "presence_penalty":0,"frequency_penalty":0,"echo":false,"best_of":2,"priority":4})",
      false, &r, &e))
      << e.message;
  EXPECT_EQ(r.gen.model, "m");
  ASSERT_EQ(r.gen.prompts.size(), 1u);
  EXPECT_EQ(r.gen.prompts[0].text, "hi");
  EXPECT_FALSE(r.gen.prompts[0].is_tokens);
  EXPECT_EQ(r.gen.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.gen.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.gen.top_p, 0.9f);
  EXPECT_EQ(r.gen.top_k, 0);
  ASSERT_TRUE(r.gen.seed.has_value());
  EXPECT_EQ(*r.gen.seed, 3u);
  EXPECT_EQ(r.gen.n, 2);
  EXPECT_EQ(r.gen.stop, std::vector<std::string>{"\n"});
  EXPECT_EQ(r.gen.logprobs, 2);
  EXPECT_EQ(r.gen.priority, 4);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_FALSE(r.gen.chat);
  // Defaults.
  ASSERT_TRUE(ParseOpenAiRequest(R"({"model":"m","prompt":"x"})", false, &r, &e));
  EXPECT_EQ(r.gen.max_tokens, 16);
  EXPECT_FLOAT_EQ(r.gen.temperature, 1.0f);
  EXPECT_EQ(r.gen.logprobs, -1);
  EXPECT_FALSE(r.gen.seed.has_value());
}

TEST(OpenAiRequest, PromptFormsAndSampling) {
  OpenAiRequest r;
  OpenAiFieldError e;
  ASSERT_TRUE(ParseOpenAiRequest(R"({"model":"m","prompt":["a","b",""],"echo":true,"suffix":""})", false, &r, &e))
      << e.message;
  ASSERT_EQ(r.gen.prompts.size(), 3u);
  EXPECT_EQ(r.gen.prompts[1].text, "b");
  EXPECT_TRUE(r.gen.echo);
  ASSERT_TRUE(ParseOpenAiRequest(R"({"model":"m","prompt":[1,2,3]})", false, &r, &e)) << e.message;
  ASSERT_EQ(r.gen.prompts.size(), 1u);
  EXPECT_TRUE(r.gen.prompts[0].is_tokens);
  EXPECT_EQ(r.gen.prompts[0].tokens, (std::vector<int32_t>{1, 2, 3}));
  ASSERT_TRUE(ParseOpenAiRequest(
      R"({"model":"m","prompt":[[1],[4,5]],"presence_penalty":-2,"frequency_penalty":1.5,"repetition_penalty":1.1,
          "min_p":0.05,"top_k":5,"logit_bias":{"7":100,"0":-100}})",
      false, &r, &e))
      << e.message;
  ASSERT_EQ(r.gen.prompts.size(), 2u);
  EXPECT_EQ(r.gen.prompts[1].tokens, (std::vector<int32_t>{4, 5}));
  EXPECT_FLOAT_EQ(r.gen.presence_penalty, -2);
  EXPECT_FLOAT_EQ(r.gen.frequency_penalty, 1.5f);
  EXPECT_FLOAT_EQ(r.gen.repetition_penalty, 1.1f);
  EXPECT_FLOAT_EQ(r.gen.min_p, 0.05f);
  EXPECT_EQ(r.gen.top_k, 5);
  const std::vector<std::pair<int32_t, float>> bias = {{7, 100.0f}, {0, -100.0f}};
  EXPECT_EQ(r.gen.logit_bias, bias);
  // Neutral values are the defaults.
  ASSERT_TRUE(ParseOpenAiRequest(R"({"model":"m","prompt":"x","presence_penalty":0,"frequency_penalty":0})", false, &r, &e));
  EXPECT_EQ(r.gen.presence_penalty, 0);
  EXPECT_EQ(r.gen.repetition_penalty, 1);
  // Too many choices: prompts * n over 256.
  std::string many = R"({"model":"m","n":2,"prompt":[)";
  for (int i = 0; i < 129; ++i) many += std::string(i ? "," : "") + "\"p\"";
  EXPECT_EQ(Refused(many + "]}").field, "prompt");
}

TEST(OpenAiRequest, ChatFields) {
  OpenAiRequest r;
  OpenAiFieldError e;
  ASSERT_TRUE(ParseOpenAiRequest(
      R"({"model":"m","messages":[{"role":"developer","content":"be brief"},
          {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"name":"x"}],
          "max_completion_tokens":5,"logprobs":true,"top_logprobs":3,"response_format":{"type":"text"}})",
      true, &r, &e))
      << e.message;
  ASSERT_EQ(r.gen.messages.size(), 2u);
  EXPECT_EQ(r.gen.messages[0].role, "system");
  EXPECT_EQ(r.gen.messages[1].content, "ab");
  EXPECT_EQ(r.gen.max_tokens, 5);
  EXPECT_EQ(r.gen.logprobs, 3);
  EXPECT_TRUE(r.gen.chat);
  ASSERT_TRUE(ParseOpenAiRequest(R"({"model":"m","messages":[{"role":"user","content":"x"}]})", true, &r, &e));
  EXPECT_LT(r.gen.max_tokens, 0);  // no limit given: the service generates up to the context
}

TEST(OpenAiRequest, RefusalsNameTheField) {
  EXPECT_EQ(Refused(R"({"prompt":"x"})").field, "model");
  EXPECT_EQ(Refused(R"({"model":"m"})").field, "prompt");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":[]})").field, "prompt");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":[[]]})").field, "prompt");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":[1,-2]})").field, "prompt");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":["a",[1]]})").field, "prompt");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":[[1],"a"]})").field, "prompt");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":{"a":1}})").field, "prompt");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","max_tokens":0})").field, "max_tokens");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","max_tokens":"5"})").field, "max_tokens");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","temperature":-1})").field, "temperature");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","top_p":0})").field, "top_p");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","n":17})").field, "n");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","stop":["a","b","c","d","e"]})").field, "stop");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","stop":[""]})").field, "stop");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","logprobs":6})").field, "logprobs");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","presence_penalty":2.1})").field, "presence_penalty");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","frequency_penalty":-2.1})").field, "frequency_penalty");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","frequency_penalty":"1"})").field, "frequency_penalty");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","repetition_penalty":0})").field, "repetition_penalty");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","repetition_penalty":-1})").field, "repetition_penalty");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","min_p":1.5})").field, "min_p");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","top_k":-2})").field, "top_k");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","top_k":1.5})").field, "top_k");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","logit_bias":{"5":101}})").field, "logit_bias");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","logit_bias":{"-5":1}})").field, "logit_bias");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","logit_bias":{"a":1}})").field, "logit_bias");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","logit_bias":[1]})").field, "logit_bias");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","echo":true,"logprobs":1})").field, "echo");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","n":3,"best_of":2})").field, "best_of");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","best_of":3,"stream":true})").field, "best_of");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","best_of":17})").field, "best_of");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","stop_token_ids":[-1]})").field, "stop_token_ids");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","stop_token_ids":7})").field, "stop_token_ids");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","suffix":"s"})").field, "suffix");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","stream_options":{"include_usage":true}})").field, "stream_options");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","stream":true,"stream_options":{"x":1}})").field, "stream_options.x");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","mystery":1})").field, "mystery");
  EXPECT_EQ(Refused(R"({"model":"m","messages":[]})", true).field, "messages");
  EXPECT_EQ(Refused(R"({"model":"m","messages":[{"role":"tool","content":"x"}]})", true).field, "messages[0].tool_call_id");
  EXPECT_EQ(Refused(R"({"model":"m","messages":[{"role":"robot","content":"x"}]})", true).field, "messages[0].role");
  EXPECT_EQ(Refused(R"({"model":"m","messages":[{"role":"user"}]})", true).field, "messages[0].content");
  EXPECT_EQ(Refused(R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]})", true).field,
            "messages[0].content");
  EXPECT_EQ(Refused(R"({"model":"m","messages":[{"role":"user","content":"x","extra":1}]})", true).field,
            "messages[0].extra");
  EXPECT_EQ(Refused(R"({"model":"m","messages":[{"role":"user","content":"x"}],"tools":[]})", true).field, "tools");
  EXPECT_EQ(Refused(R"({"model":"m","messages":[{"role":"user","content":"x"}],"top_logprobs":2})", true).field,
            "top_logprobs");
  EXPECT_EQ(Refused(R"({"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}})",
                    true).field,
            "response_format.json_schema");
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","response_format":{"type":"yaml"}})").field, "response_format.type");
  const OpenAiFieldError broken = Refused(R"({"model": "m", "prompt": )");
  EXPECT_EQ(broken.field, "");
  EXPECT_NE(broken.message.find("malformed JSON"), std::string::npos);
  EXPECT_EQ(Refused("[1,2]").field, "");
}

TEST(OpenAiRequest, Tools) {
  using Choice = serve::TextGenerationRequest::ToolChoice;
  OpenAiRequest r;
  OpenAiFieldError e;
  ASSERT_TRUE(ParseOpenAiRequest(R"({"model":"m","messages":[{"role":"user","content":"x"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"2"}],
      "tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"},"strict":true}},
               {"type":"function","function":{"name":"g"}}],
      "tool_choice":{"type":"function","function":{"name":"g"}},"parallel_tool_calls":false})", true, &r, &e)) << e.message;
  ASSERT_EQ(r.gen.tools.size(), 2u);
  EXPECT_EQ(r.gen.tools[0].parameters, R"({"type":"object"})");
  EXPECT_TRUE(r.gen.tools[0].strict);
  EXPECT_EQ(r.gen.tools[1].parameters, R"({"type":"object","properties":{}})");
  EXPECT_EQ(r.gen.tool_choice, Choice::kFunction);
  EXPECT_EQ(r.gen.tool_choice_name, "g");
  ASSERT_EQ(r.gen.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.gen.messages[1].tool_calls[0].arguments, R"({"a":1})");
  EXPECT_EQ(r.gen.messages[2].tool_call_id, "call_1");
  ASSERT_TRUE(ParseOpenAiRequest(R"({"model":"m","messages":[{"role":"user","content":"x"}],
      "tools":[{"type":"function","function":{"name":"f"}}]})", true, &r, &e));
  EXPECT_EQ(r.gen.tool_choice, Choice::kAuto);  // the default with tools
  const std::string head = R"({"model":"m","messages":[{"role":"user","content":"x"}],)";
  EXPECT_EQ(Refused(head + R"("tool_choice":"auto"})", true).field, "tool_choice");
  EXPECT_EQ(Refused(head + R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"h"}}})", true).field,
            "tool_choice");
  EXPECT_EQ(Refused(head + R"("tools":[{"type":"function","function":{"name":"f","extra":1}}]})", true).field, "tools[0].function.extra");
  EXPECT_EQ(Refused(head + R"("tools":[{"type":"function","function":{"name":"f"}}],"response_format":{"type":"json_object"}})", true).field,
            "response_format");
}

TEST(OpenAiRequest, ResponseFormat) {
  using Format = serve::TextGenerationRequest::Format;
  OpenAiRequest r;
  OpenAiFieldError e;
  ASSERT_TRUE(ParseOpenAiRequest(R"({"model":"m","messages":[{"role":"user","content":"x"}],
      "response_format":{"type":"json_schema","json_schema":{"name":"a_b-1","description":"d","strict":true,
      "schema":{"type": "object", "properties": {"k": {"type": "integer"}}}}}})", true, &r, &e)) << e.message;
  EXPECT_EQ(r.gen.format, Format::kJsonSchema);
  EXPECT_TRUE(r.gen.json_schema_strict);
  EXPECT_EQ(r.gen.json_schema, R"({"type":"object","properties":{"k":{"type":"integer"}}})");
  ASSERT_TRUE(ParseOpenAiRequest(R"({"model":"m","prompt":"x","response_format":{"type":"json_object"}})", false, &r, &e));
  EXPECT_EQ(r.gen.format, Format::kJsonObject);
  ASSERT_TRUE(ParseOpenAiRequest(R"({"model":"m","prompt":"x","response_format":{"type":"text"}})", false, &r, &e));
  EXPECT_EQ(r.gen.format, Format::kText);
  EXPECT_EQ(Refused(R"({"model":"m","prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"bad name!","schema":{}}}})").field,
            "response_format.json_schema.name");
}

}  // namespace
}  // namespace inferloop::frontends
