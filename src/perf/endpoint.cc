#include "perf/endpoint.h"

#include <cctype>

namespace inferloop::perf {

Result<Endpoint> ParseEndpoint(const std::string& url) {
  Endpoint e;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    e.protocol = Endpoint::Protocol::kRest;
    rest = url.substr(7);
  } else if (url.rfind("grpc://", 0) == 0) {
    e.protocol = Endpoint::Protocol::kGrpc;
    rest = url.substr(7);
  } else {
    return Status::InvalidArgument("--url '" + url + "': expected http://HOST:PORT or grpc://HOST:PORT");
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
    return Status::InvalidArgument("--url '" + url + "': expected HOST:PORT after the scheme");
  e.host = rest.substr(0, colon);
  e.port = rest.substr(colon + 1);
  if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']') e.host = e.host.substr(1, e.host.size() - 2);
  if (e.host.find('/') != std::string::npos)
    return Status::InvalidArgument("--url '" + url + "': no path allowed, only HOST:PORT");
  for (char c : e.port)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return Status::InvalidArgument("--url '" + url + "': port '" + e.port + "' is not a number");
  if (std::stol(e.port.substr(0, 6)) > 65535 || std::stol(e.port.substr(0, 6)) == 0)
    return Status::InvalidArgument("--url '" + url + "': port out of range");
  return e;
}

}  // namespace inferloop::perf
