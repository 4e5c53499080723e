#include "frontends/api_keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace inferloop::frontends {
namespace {

const std::string kInferKey = "infer-key-0123456789abcdef";
const std::string kControlKey = "control-key-0123456789abcdef";
const std::string kAllKey = "all-key-0123456789abcdef";

std::unique_ptr<ApiKeys> ParseOk(const std::string& text) {
  auto keys = ApiKeys::Parse(text, "keys.txt");
  EXPECT_TRUE(keys.ok()) << keys.status().message();
  return keys.ok() ? std::move(keys).value() : nullptr;
}

std::string ParseError(const std::string& text) {
  auto keys = ApiKeys::Parse(text, "keys.txt");
  EXPECT_FALSE(keys.ok());
  return keys.ok() ? "" : keys.status().message();
}

std::unique_ptr<ApiKeys> ThreeKeys() {
  return ParseOk("# keys\n\n" + kInferKey + " infer\n  " + kControlKey + "\tcontrol   # the operator\n" + kAllKey +
                 " infer,control,metrics\n");
}

AuthResult Check(ApiKeys& keys, const std::string& header, Access needed) {
  return keys.Check(&header, needed).result;
}

TEST(ApiKeysTest, ParsesKeysCommentsAndBlankLines) {
  auto keys = ThreeKeys();
  ASSERT_NE(keys, nullptr);
  EXPECT_EQ(keys->size(), 3u);
  // CRLF line ends are fine too.
  auto crlf = ParseOk(kInferKey + " infer\r\n" + kAllKey + " metrics,infer rate=5/s\r\n");
  ASSERT_NE(crlf, nullptr);
  EXPECT_EQ(crlf->size(), 2u);
  EXPECT_EQ(Check(*crlf, "Bearer " + kAllKey, Access::kMetrics), AuthResult::kAllowed);
}

TEST(ApiKeysTest, BadLinesNameTheFileAndLineButNeverTheKey) {
  const std::string secret = "SECRET-do-not-print-0123456789";
  struct Case {
    std::string line;
    std::string expected;  // a part of the message
  };
  const std::vector<Case> cases = {
      {secret, "expected 'KEY PERMISSIONS [rate=N/s]' (1 fields)"},
      {secret + " infer rate=5/s extra", "(4 fields)"},
      {secret + " infer,admin", "unknown permission 'admin'"},
      {secret + " infer,infer", "permission 'infer' given twice"},
      {secret + " infer,", "unknown permission ''"},
      {secret + " infer rate=0/s", "rate=N/s"},
      {secret + " infer rate=5", "rate=N/s"},
      {secret + " infer rate=-1/s", "rate=N/s"},
      {secret + " infer rate=99999999999999999999/s", "rate=N/s"},
      {"SECRETshort infer", "the key must have 16 to 256 characters (it has 11)"},
      {std::string(300, 'S') + " infer", "(it has 300)"},
      {"SECRET\x01-0123456789abcdef infer", "visible ASCII"},
  };
  for (const Case& c : cases) {
    const std::string message = ParseError("# header\n" + kInferKey + " infer\n" + c.line + "\n");
    EXPECT_NE(message.find("keys.txt line 3: "), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_EQ(message.find("SECRET"), std::string::npos) << message;
  }
}

TEST(ApiKeysTest, DuplicateKeysAndEmptyFilesAreErrors) {
  const std::string message = ParseError(kInferKey + " infer\n\n" + kAllKey + " metrics\n" + kInferKey + " control\n");
  EXPECT_NE(message.find("keys.txt line 4: the key of line 1 again"), std::string::npos) << message;
  EXPECT_EQ(message.find(kInferKey), std::string::npos) << message;
  EXPECT_NE(ParseError("# only comments\n\n").find("keys.txt: no key"), std::string::npos);
  EXPECT_NE(ParseError("").find("no key"), std::string::npos);
  auto missing = ApiKeys::Load("/nonexistent/keys.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/keys.txt"), std::string::npos);
}

TEST(ApiKeysTest, ChecksKeysAndPermissions) {
  auto keys = ThreeKeys();
  ASSERT_NE(keys, nullptr);
  std::vector<AuthResult> refused;
  keys->set_on_refused([&](AuthResult r) { refused.push_back(r); });
  EXPECT_EQ(keys->Check(nullptr, Access::kInfer).result, AuthResult::kMissing);
  EXPECT_EQ(keys->Check(nullptr, Access::kOpen).result, AuthResult::kAllowed);
  EXPECT_EQ(keys->Check(nullptr, Access::kAnyKey).result, AuthResult::kMissing);
  EXPECT_EQ(Check(*keys, "Basic " + kInferKey, Access::kInfer), AuthResult::kMissing);
  EXPECT_EQ(Check(*keys, "Bearer ", Access::kInfer), AuthResult::kMissing);
  EXPECT_EQ(Check(*keys, "Bearer " + kInferKey + "x", Access::kInfer), AuthResult::kInvalid);
  EXPECT_EQ(Check(*keys, "Bearer " + kInferKey.substr(1), Access::kInfer), AuthResult::kInvalid);
  EXPECT_EQ(Check(*keys, "Bearer " + kInferKey, Access::kInfer), AuthResult::kAllowed);
  EXPECT_EQ(Check(*keys, "bearer   " + kInferKey + " ", Access::kInfer), AuthResult::kAllowed);
  EXPECT_EQ(Check(*keys, "Bearer " + kInferKey, Access::kAnyKey), AuthResult::kAllowed);
  EXPECT_EQ(Check(*keys, "Bearer " + kInferKey, Access::kControl), AuthResult::kForbidden);
  EXPECT_EQ(Check(*keys, "Bearer " + kInferKey, Access::kMetrics), AuthResult::kForbidden);
  EXPECT_EQ(Check(*keys, "Bearer " + kControlKey, Access::kControl), AuthResult::kAllowed);
  EXPECT_EQ(Check(*keys, "Bearer " + kControlKey, Access::kInfer), AuthResult::kForbidden);
  for (Access a : {Access::kInfer, Access::kControl, Access::kMetrics, Access::kAnyKey}) {
    EXPECT_EQ(Check(*keys, "Bearer " + kAllKey, a), AuthResult::kAllowed);
  }
  const std::vector<AuthResult> expected = {AuthResult::kMissing,   AuthResult::kMissing,   AuthResult::kMissing,
                                            AuthResult::kMissing,   AuthResult::kInvalid,   AuthResult::kInvalid,
                                            AuthResult::kForbidden, AuthResult::kForbidden, AuthResult::kForbidden};
  EXPECT_EQ(refused, expected);
}

TEST(ApiKeysTest, ReloadSwapsTheKeysAndKeepsThemWhenTheNewFileIsBad) {
  const std::string path = ::testing::TempDir() + "api_keys_reload_test.txt";
  auto write = [&](const std::string& text) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  };
  write(kInferKey + " infer\n");
  auto loaded = ApiKeys::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ApiKeys& keys = **loaded;
  EXPECT_EQ(Check(keys, "Bearer " + kInferKey, Access::kInfer), AuthResult::kAllowed);
  EXPECT_EQ(Check(keys, "Bearer " + kControlKey, Access::kControl), AuthResult::kInvalid);

  // The infer key replaced by the control key, which also gains infer.
  write(kControlKey + " control,infer\n" + kAllKey + " metrics\n");
  ASSERT_TRUE(keys.Reload().ok());
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_EQ(Check(keys, "Bearer " + kInferKey, Access::kInfer), AuthResult::kInvalid);
  EXPECT_EQ(Check(keys, "Bearer " + kControlKey, Access::kInfer), AuthResult::kAllowed);
  EXPECT_EQ(Check(keys, "Bearer " + kAllKey, Access::kInfer), AuthResult::kForbidden);

  // A bad file: the error names the line, not the key, and the keys of the last good file stay.
  write(kInferKey + " infer\n" + kInferKey + " control\n");
  Status st = keys.Reload();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("line 2"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find(kInferKey), std::string::npos) << st.message();
  EXPECT_EQ(Check(keys, "Bearer " + kControlKey, Access::kInfer), AuthResult::kAllowed);
  EXPECT_EQ(Check(keys, "Bearer " + kInferKey, Access::kInfer), AuthResult::kInvalid);
  std::remove(path.c_str());
  EXPECT_EQ(keys.Reload().code(), StatusCode::kNotFound);
  EXPECT_EQ(keys.size(), 2u);

  // Keys from text have no file to read again.
  EXPECT_EQ(ThreeKeys()->Reload().code(), StatusCode::kFailedPrecondition);
}

TEST(ApiKeysTest, RateLimitIsATokenBucketPerKey) {
  auto keys = ParseOk(kInferKey + " infer rate=3/s\n" + kAllKey + " infer\n");
  ASSERT_NE(keys, nullptr);
  const std::string h = "Bearer " + kInferKey;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Check(*keys, h, Access::kInfer), AuthResult::kAllowed) << i;
  AuthVerdict v = keys->Check(&h, Access::kInfer);
  EXPECT_EQ(v.result, AuthResult::kRateLimited);
  EXPECT_EQ(v.retry_after_seconds, 1);
  // A refused request takes no token; the other key has no limit.
  EXPECT_EQ(Check(*keys, h, Access::kControl), AuthResult::kForbidden);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(Check(*keys, "Bearer " + kAllKey, Access::kInfer), AuthResult::kAllowed);
}

TEST(ApiKeysTest, RestRoutesMapToPermissions) {
  EXPECT_EQ(RestAccess("/v2/health/live"), Access::kOpen);
  EXPECT_EQ(RestAccess("/v2/health/ready?x=1"), Access::kOpen);
  EXPECT_EQ(RestAccess("/v2/health/%72eady"), Access::kOpen);  // decoded like the router does
  EXPECT_EQ(RestAccess("/v2/health"), Access::kInfer);
  EXPECT_EQ(RestAccess("/v2"), Access::kInfer);
  EXPECT_EQ(RestAccess("/v2/models/m"), Access::kInfer);
  EXPECT_EQ(RestAccess("/v2/models/m/versions/1/infer"), Access::kInfer);
  EXPECT_EQ(RestAccess("/v2/models/m/config"), Access::kInfer);
  EXPECT_EQ(RestAccess("/v2/models/m/adaptive"), Access::kInfer);
  EXPECT_EQ(RestAccess("/v2/models/m/adaptive/pin"), Access::kControl);
  EXPECT_EQ(RestAccess("/v2/models/m/versions/2/adaptive/free"), Access::kControl);
  EXPECT_EQ(RestAccess("/v2/repository/index"), Access::kControl);
  EXPECT_EQ(RestAccess("/v2/repository/models/m/load"), Access::kControl);
  EXPECT_EQ(RestAccess("/v2/%72epository/models/m/unload"), Access::kControl);
  EXPECT_EQ(RestAccess("/v2/models/stats"), Access::kMetrics);
  EXPECT_EQ(RestAccess("/v2/models/m/versions/1/stats"), Access::kMetrics);
  EXPECT_EQ(RestAccess("/metrics"), Access::kMetrics);
  EXPECT_EQ(RestAccess("/metrics?name=x"), Access::kMetrics);
  EXPECT_EQ(RestAccess("/v1/models"), Access::kInfer);
  EXPECT_EQ(RestAccess("/v1/chat/completions"), Access::kInfer);
  EXPECT_EQ(RestAccess("/"), Access::kAnyKey);
  EXPECT_EQ(RestAccess("/secret"), Access::kAnyKey);
  EXPECT_EQ(RestAccess("/v2/%zz"), Access::kAnyKey);
  EXPECT_EQ(RestAccess("*"), Access::kAnyKey);
}

TEST(ApiKeysTest, GrpcMethodsMapToPermissions) {
  EXPECT_EQ(GrpcAccess("ServerLive"), Access::kOpen);
  EXPECT_EQ(GrpcAccess("/inference.GRPCInferenceService/ServerReady"), Access::kOpen);
  EXPECT_EQ(GrpcAccess("ModelInfer"), Access::kInfer);
  EXPECT_EQ(GrpcAccess("ModelStreamInfer"), Access::kInfer);
  EXPECT_EQ(GrpcAccess("ServerMetadata"), Access::kInfer);
  EXPECT_EQ(GrpcAccess("RepositoryModelLoad"), Access::kControl);
  EXPECT_EQ(GrpcAccess("ModelPin"), Access::kControl);
  EXPECT_EQ(GrpcAccess("ModelStatistics"), Access::kMetrics);
  EXPECT_EQ(GrpcAccess("Unknown"), Access::kAnyKey);
}

TEST(ApiKeysTest, RefusalsNeverEchoTheKeyAndUseEachProtocolsShape) {
  HttpResponse r = AuthRefusalResponse({AuthResult::kInvalid, 0}, "/v1/models");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.body,
            "{\"error\":{\"message\":\"the API key is not valid\",\"type\":\"invalid_request_error\",\"param\":null,"
            "\"code\":\"invalid_api_key\"}}");
  ASSERT_NE(FindHttpHeader(r.headers, "www-authenticate"), nullptr);
  EXPECT_EQ(*FindHttpHeader(r.headers, "www-authenticate"), "Bearer");
  r = AuthRefusalResponse({AuthResult::kForbidden, 0}, "/v2/repository/index");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.body, "{\"error\":\"the API key does not have the permission this request needs\"}");
  EXPECT_EQ(FindHttpHeader(r.headers, "www-authenticate"), nullptr);
  r = AuthRefusalResponse({AuthResult::kRateLimited, 2}, "/v2/models/m/infer");
  EXPECT_EQ(r.status, 429);
  ASSERT_NE(FindHttpHeader(r.headers, "retry-after"), nullptr);
  EXPECT_EQ(*FindHttpHeader(r.headers, "retry-after"), "2");
  r = AuthRefusalResponse({AuthResult::kMissing, 0}, "/v2");
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(r.body.find("Authorization: Bearer"), std::string::npos);
}

// Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected ranks).
double MannWhitneyP(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<std::pair<double, int>> all;
  for (double x : a) all.push_back({x, 0});
  for (double x : b) all.push_back({x, 1});
  std::sort(all.begin(), all.end());
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size()), n = n1 + n2;
  double rank_sum_a = 0, ties = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2, t = static_cast<double>(j - i);
    for (size_t k = i; k < j; ++k) rank_sum_a += all[k].second == 0 ? rank : 0;
    ties += t * t * t - t;
    i = j;
  }
  const double u = rank_sum_a - n1 * (n1 + 1) / 2;
  const double sigma = std::sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))));
  return sigma > 0 ? std::erfc(std::fabs(u - n1 * n2 / 2) / sigma / std::sqrt(2.0)) : 1.0;
}

double Median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The check's own time (no network): interleaved calls with the 1st and the 2nd stored key (both
// refused: forbidden), a wrong key of the same length sharing nothing, and one sharing all but the
// last character with a stored key; the distributions compared with a rank test. Figures are
// printed, not asserted (no timing threshold in a test). Stored vs wrong may differ by the branch
// on the outcome (which the answer's status says anyway); near vs wrong and 1st vs 2nd must not.
TEST(ApiKeysTest, CheckTimeDoesNotTellKeysApart) {
  const std::string other_key = "other-key-0123456789abcdef";  // kInferKey's length
  auto keys = ParseOk(kInferKey + " infer\n" + other_key + " control\n" + kAllKey + " infer,control,metrics\n");
  ASSERT_NE(keys, nullptr);
  const std::string headers[4] = {"Bearer " + kInferKey, "Bearer " + std::string(kInferKey.size(), 'x'),
                                  "Bearer " + kInferKey.substr(0, kInferKey.size() - 1) + "!", "Bearer " + other_key};
  const AuthResult expected[4] = {AuthResult::kForbidden, AuthResult::kInvalid, AuthResult::kInvalid,
                                  AuthResult::kForbidden};
  std::vector<int> order;
  for (int i = 0; i < 40000; ++i) order.push_back(i % 4);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  std::vector<double> ns[4];
  for (int kind : order) {
    const auto t0 = std::chrono::steady_clock::now();
    const AuthResult r = keys->Check(&headers[kind], Access::kMetrics).result;
    const auto t1 = std::chrono::steady_clock::now();
    ASSERT_EQ(r, expected[kind]);
    ns[kind].push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  std::printf("Check() medians (n=%zu each): 1st stored key %.0f ns, 2nd stored key %.0f ns, wrong key %.0f ns, near "
              "key %.0f ns; Mann-Whitney U p: near vs wrong %.3g, 2nd vs 1st stored %.3g, stored vs wrong %.3g\n",
              ns[0].size(), Median(ns[0]), Median(ns[3]), Median(ns[1]), Median(ns[2]), MannWhitneyP(ns[2], ns[1]),
              MannWhitneyP(ns[3], ns[0]), MannWhitneyP(ns[0], ns[1]));
}

}  // namespace
}  // namespace inferloop::frontends
