// The image_preprocess, classification and report backends driven as the model manager drives
// them, against values worked out independently: a PNG made here with imaging's encoder and
// resized by hand, Triton's classification strings for known scores, the report's verdict rule.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/classification/classification_backend.h"
#include "backends/detection/nms_backend.h"
#include "backends/image/image_preprocess_backend.h"
#include "backends/report/report_backend.h"
#include "imaging/image_codec.h"
#include "processing_step_harness.h"

namespace inferloop::serve {
namespace {

using testing::InferNow;
using testing::LoadStep;
using testing::NoModels;
using testing::OutputNamed;

const char kPreprocessConfig[] = R"(backend: "image_preprocess"
max_batch_size: 4
input [ { name: "IMAGE" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "small" data_type: TYPE_FP32 dims: [ 1, 1, 2 ] }, { name: "same" data_type: TYPE_UINT8 dims: [ 1, 2, 4 ] } ]
parameters { key: "color" value: { string_value: "gray" } }
parameters { key: "scale" value: { string_value: "1" } }
parameters { key: "mean" value: { string_value: "100" } }
parameters { key: "std" value: { string_value: "2" } }
parameters { key: "max_pixels" value: { string_value: "8" } }
)";

TEST(ImagePreprocessBackend, DecodesOnceIntoEveryOutputSize) {
  auto backend = backends::MakeImagePreprocessBackend();
  NoModels none;
  auto v = LoadStep(*backend, kPreprocessConfig, &none);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  // A 4x2 gray image: rows [0 40 80 120] and [200 200 200 200].
  imaging::Image img{2, 4, 1, {0, 40, 80, 120, 200, 200, 200, 200}};
  auto png = imaging::EncodePng(img);
  ASSERT_TRUE(png.ok());
  auto r = InferNow(**v, {{"IMAGE", Tensor::FromStrings({1, 1}, {*png}), {}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // 4x2 -> 2x1 with half-pixel bilinear: x samples 0.5 and 2.5 -> (0+40)/2, (80+120)/2; y samples
  // 0.5 -> the two rows' mean. Then (v - 100) / 2.
  const Tensor* small = OutputNamed(*r, "small");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->shape(), Shape({1, 1, 1, 2}));
  EXPECT_FLOAT_EQ(small->data<float>()[0], ((20 + 200) / 2.0f - 100) / 2);
  EXPECT_FLOAT_EQ(small->data<float>()[1], ((100 + 200) / 2.0f - 100) / 2);
  const Tensor* same = OutputNamed(*r, "same");
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(std::vector<uint8_t>(same->data<uint8_t>(), same->data<uint8_t>() + 8), img.pixels);
}

TEST(ImagePreprocessBackend, BadImagesAndConfigsAreNamed) {
  auto backend = backends::MakeImagePreprocessBackend();
  NoModels none;
  auto v = LoadStep(*backend, kPreprocessConfig, &none);
  ASSERT_TRUE(v.ok());
  auto garbage = InferNow(**v, {{"IMAGE", Tensor::FromStrings({2, 1}, {"x", "y"}), {}}});
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(garbage.status().message().find("input 'IMAGE' row 0"), std::string::npos) << garbage.status().ToString();
  imaging::Image big{3, 3, 1, std::vector<uint8_t>(9, 7)};  // 9 pixels > max_pixels 8
  auto r = InferNow(**v, {{"IMAGE", Tensor::FromStrings({1, 1}, {*imaging::EncodePng(big)}), {}}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("9 pixels"), std::string::npos) << r.status().ToString();
  std::string bad = kPreprocessConfig;
  bad += "parameters { key: \"fit\" value: { string_value: \"squash\" } }\n";
  auto refused = LoadStep(*backend, bad, &none);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'fit'"), std::string::npos);
}

TEST(ClassificationBackend, TritonStringsPerRow) {
  auto backend = backends::MakeClassificationBackend();
  NoModels none;
  auto v = LoadStep(*backend, R"(backend: "classification"
max_batch_size: 4
input [ { name: "scores" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "top" data_type: TYPE_STRING dims: [ 2 ] } ]
parameters { key: "class_count" value: { string_value: "2" } }
)", &none);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  auto r = InferNow(**v, {{"scores", Tensor::FromVector<float>(DataType::kFloat, {2, 3}, {0.1f, 0.75f, 0.15f, 0.5f, 0.2f, 0.3f}), {}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor* top = OutputNamed(*r, "top");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->shape(), Shape({2, 2}));
  EXPECT_EQ(top->strings()[0], "0.750000:1");
  EXPECT_EQ(top->strings()[1], "0.150000:2");
  EXPECT_EQ(top->strings()[2], "0.500000:0");
  EXPECT_EQ(top->strings()[3], "0.300000:2");
  auto too_many = LoadStep(*backend, R"(backend: "classification"
input [ { name: "scores" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "top" data_type: TYPE_STRING dims: [ 4 ] } ]
parameters { key: "class_count" value: { string_value: "4" } })", &none);
  EXPECT_FALSE(too_many.ok());
}

TEST(ReportBackend, VerdictFromTheRuleAndSkippedInputs) {
  auto backend = backends::MakeReportBackend();
  NoModels none;
  auto v = LoadStep(*backend, R"(backend: "report"
max_batch_size: 4
input [ { name: "score" data_type: TYPE_FP32 dims: [ 1 ] }, { name: "probs" data_type: TYPE_FP32 dims: [ 2 ] optional: true } ]
output [ { name: "report" data_type: TYPE_STRING dims: [ 1 ] } ]
parameters { key: "verdict_tensor" value: { string_value: "probs" } }
parameters { key: "verdict_index" value: { string_value: "1" } }
parameters { key: "verdict_labels" value: { string_value: "ok,defect" } }
parameters { key: "verdict_when_absent" value: { string_value: "ok" } }
)", &none);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  auto both = InferNow(**v, {{"score", Tensor::FromVector<float>(DataType::kFloat, {2, 1}, {0.9f, 0.2f}), {}},
                             {"probs", Tensor::FromVector<float>(DataType::kFloat, {2, 2}, {0.1f, 0.9f, 0.6f, 0.4f}), {}}});
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  const Tensor* rep = OutputNamed(*both, "report");
  ASSERT_NE(rep, nullptr);
  EXPECT_NE(rep->strings()[0].find("\"verdict\":\"defect\""), std::string::npos) << rep->strings()[0];
  EXPECT_NE(rep->strings()[0].find("\"probs\":[0.1,0.9]"), std::string::npos) << rep->strings()[0];
  EXPECT_NE(rep->strings()[1].find("\"verdict\":\"ok\""), std::string::npos) << rep->strings()[1];
  auto skipped = InferNow(**v, {{"score", Tensor::FromVector<float>(DataType::kFloat, {1, 1}, {0.01f}), {}}});
  ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
  const std::string doc = OutputNamed(*skipped, "report")->strings()[0];
  EXPECT_NE(doc.find("\"verdict\":\"ok\""), std::string::npos) << doc;
  EXPECT_NE(doc.find("\"skipped\":[\"probs\"]"), std::string::npos) << doc;
  // A model output NaN is JSON null (JSON has no NaN).
  auto odd = InferNow(**v, {{"score", Tensor::FromVector<float>(DataType::kFloat, {1, 1}, {std::nanf("")}), {}},
                            {"probs", Tensor::FromVector<float>(DataType::kFloat, {1, 2}, {0, 1}), {}}});
  ASSERT_TRUE(odd.ok()) << odd.status().ToString();
  const std::string odd_doc = OutputNamed(*odd, "report")->strings()[0];
  EXPECT_NE(odd_doc.find("\"score\":[null]"), std::string::npos) << odd_doc;
  EXPECT_NE(odd_doc.find("\"probs\":[0,1]"), std::string::npos) << odd_doc;
  EXPECT_NE(odd_doc.find("\"verdict\":\"defect\""), std::string::npos) << odd_doc;
}

// The trace a report step reads: each row's stages from the ensemble's document (a batch of two
// rows gets them in both), and a trace that is not such a document is a clear error (a client may
// call the report model directly with any text there).
TEST(ReportBackend, StagesFromTheTraceInEveryRowAndBadTracesRefused) {
  auto backend = backends::MakeReportBackend();
  NoModels none;
  auto v = LoadStep(*backend, R"(backend: "report"
max_batch_size: 4
input [ { name: "score" data_type: TYPE_FP32 dims: [ 1 ] }, { name: "trace" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "report" data_type: TYPE_STRING dims: [ 1 ] } ]
parameters { key: "verdict_tensor" value: { string_value: "score" } }
parameters { key: "trace_input" value: { string_value: "trace" } }
)", &none);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  const std::string doc =
      R"json({"ensemble":"e","version":"1","steps":[{"step":"step 1 (m)","model":"m","version":"1","outcome":"ran","ms":1.5}]})json";
  auto r = InferNow(**v, {{"score", Tensor::FromVector<float>(DataType::kFloat, {2, 1}, {0.2f, 0.8f}), {}},
                          {"trace", Tensor::FromStrings({2, 1}, {doc, doc}), {}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor* rep = OutputNamed(*r, "report");
  ASSERT_NE(rep, nullptr);
  for (int row = 0; row < 2; ++row)
    EXPECT_NE(rep->strings()[row].find(
                  R"json("stages":[{"step":"step 1 (m)","model":"m","version":"1","outcome":"ran","ms":1.5}])json"),
              std::string::npos)
        << rep->strings()[row];
  for (const std::string bad : {std::string("not json \"steps\":]}"), std::string(R"({"steps":3})")}) {
    auto refused = InferNow(**v, {{"score", Tensor::FromVector<float>(DataType::kFloat, {1, 1}, {0.2f}), {}},
                                  {"trace", Tensor::FromStrings({1, 1}, {bad}), {}}});
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find("input 'trace'"), std::string::npos) << refused.status().ToString();
  }
}

}  // namespace
}  // namespace inferloop::serve

namespace inferloop::serve {
namespace {

// Three boxes: 0 and 1 overlap with IoU 81/100 (> 0.5), 2 is apart; class-agnostic NMS keeps
// box 1 (the higher score), drops 0, keeps 2, as ONNX NonMaxSuppression does.
TEST(NmsBackend, KeepsTheBestOfOverlappingBoxes) {
  auto backend = backends::MakeNmsBackend();
  testing::NoModels none;
  auto v = testing::LoadStep(*backend, R"(backend: "nms"
max_batch_size: 0
input [ { name: "boxes" data_type: TYPE_FP32 dims: [ -1, 4 ] }, { name: "scores" data_type: TYPE_FP32 dims: [ -1, 2 ] } ]
output [ { name: "detections" data_type: TYPE_FP32 dims: [ -1, 6 ] }, { name: "indices" data_type: TYPE_INT64 dims: [ -1 ] } ]
parameters { key: "iou_threshold" value: { string_value: "0.5" } }
)", &none);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  auto boxes = Tensor::FromVector<float>(DataType::kFloat, {3, 4}, {0, 0, 10, 10, 1, 1, 10, 10, 20, 20, 30, 30});
  auto scores = Tensor::FromVector<float>(DataType::kFloat, {3, 2}, {0.1f, 0.6f, 0.2f, 0.9f, 0.7f, 0.3f});
  auto r = testing::InferNow(**v, {{"boxes", boxes, {}}, {"scores", scores, {}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor* idx = testing::OutputNamed(*r, "indices");
  ASSERT_NE(idx, nullptr);
  ASSERT_EQ(idx->size(), 2);
  EXPECT_EQ(idx->data<int64_t>()[0], 1);
  EXPECT_EQ(idx->data<int64_t>()[1], 2);
  const Tensor* det = testing::OutputNamed(*r, "detections");
  EXPECT_FLOAT_EQ(det->data<float>()[4], 0.9f);
  EXPECT_FLOAT_EQ(det->data<float>()[5], 1.0f);
  EXPECT_FLOAT_EQ(det->data<float>()[11], 0.0f);  // box 2's best class
  auto mismatch = testing::InferNow(**v, {{"boxes", boxes, {}}, {"scores", Tensor::FromVector<float>(DataType::kFloat, {2, 2}, {0, 0, 0, 0}), {}}});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace inferloop::serve
