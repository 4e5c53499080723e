#include "serve/event_log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace inferloop::serve {
namespace {

TEST(EventLogTest, OneJsonObjectPerLineWithEscapedValues) {
  const std::string line =
      EventLog::Format("info", "model_load_failed", {{"model", "m\"1"}, {"reason", "bad\nfile\\x\x01"}});
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.rfind("{\"ts\":\"", 0), 0u);
  EXPECT_NE(line.find("\"level\":\"info\",\"event\":\"model_load_failed\""), std::string::npos);
  EXPECT_NE(line.find("\"model\":\"m\\\"1\""), std::string::npos);
  EXPECT_NE(line.find("\"reason\":\"bad\\nfile\\\\x\\u0001\""), std::string::npos);
  EXPECT_EQ(line.back(), '}');
}

TEST(EventLogTest, WritesWholeLines) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    EventLog log(f);
    log.Info("a", {{"k", "v"}});
    log.Error("b");
  }
  std::rewind(f);
  char buf[512];
  std::string all;
  while (std::fgets(buf, sizeof buf, f)) all += buf;
  std::fclose(f);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 2);
  EXPECT_NE(all.find("\"event\":\"a\",\"k\":\"v\"}\n"), std::string::npos);
  EXPECT_NE(all.find("\"level\":\"error\",\"event\":\"b\"}\n"), std::string::npos);
}

}  // namespace
}  // namespace inferloop::serve
