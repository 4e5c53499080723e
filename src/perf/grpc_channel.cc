#include "perf/grpc_channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

namespace inferloop::perf {

std::shared_ptr<grpc::Channel> MakeGrpcChannel(const Endpoint& endpoint) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  std::string host = endpoint.host.find(':') != std::string::npos ? "[" + endpoint.host + "]" : endpoint.host;
  return grpc::CreateCustomChannel(host + ":" + endpoint.port, grpc::InsecureChannelCredentials(), args);
}

}  // namespace inferloop::perf
