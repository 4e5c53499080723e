#include "backends/processing/ensemble_trace.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace inferloop::backends {

Result<std::string> TraceStepsJson(const std::string& trace, const std::string& input) {
  rapidjson::Document d;
  d.Parse(trace.c_str(), trace.size());
  if (d.HasParseError())
    return Status::InvalidArgument("input '" + input + "' is not JSON: " + rapidjson::GetParseError_En(d.GetParseError()) +
                                   " at offset " + std::to_string(d.GetErrorOffset()));
  const rapidjson::Value* steps = &d;
  if (d.IsObject() && d.HasMember("steps")) steps = &d["steps"];
  if (!steps->IsArray())
    return Status::InvalidArgument("input '" + input + "' is not an ensemble trace (an object with a \"steps\" array)");
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  steps->Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace inferloop::backends
