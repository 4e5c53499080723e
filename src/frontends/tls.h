// TLS for the frontends (`inferloop serve --tls-cert/--tls-key/--tls-client-ca`): a server
// certificate chain and its private key (PEM files), and optionally a client CA (mutual TLS:
// every client must present a certificate signed by it, or its handshake fails).
//
// TlsCredentials reads the files into a TlsContext (an OpenSSL server context: TLS 1.2 or newer,
// no compression; with a client CA, peer verification required). Reload() reads the files again
// into a NEW context that Current() hands to connections accepted from then on; connections
// already open keep the context they started with (shared_ptr), so a reload drops none. A reload
// that fails (a file unreadable, a key not matching the certificate) keeps the old context.
// Thread-safe. OpenSSL and Asio stay inside tls.cc and http_server.cc.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "inferloop/status.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace inferloop::frontends {

struct TlsFiles {
  std::string cert_file;       // PEM: the server certificate, then any intermediates
  std::string key_file;        // PEM: its private key (unencrypted)
  std::string client_ca_file;  // PEM: CA(s) client certificates must chain to; "": no mutual TLS
  // How errors name each file (the CLI passes its flag names).
  std::string cert_name = "certificate file";
  std::string key_name = "key file";
  std::string client_ca_name = "client CA file";
};

// One reading of the files: an OpenSSL server context, and the PEM text (for gRPC).
struct TlsContext;
boost::asio::ssl::context& AsioSslContext(TlsContext& context);

class TlsCredentials {
 public:
  // Errors (InvalidArgument), each naming the file by its *_name and path: a file that cannot be
  // read, is no PEM certificate / key, or a key that does not match the certificate.
  static Result<std::shared_ptr<TlsCredentials>> Load(TlsFiles files);

  // Reads the files again; on success Current() returns the new context. On error the old one
  // stays. Returns what Load would.
  Status Reload();
  std::shared_ptr<TlsContext> Current() const;
  const TlsFiles& files() const { return files_; }
  bool mutual() const { return !files_.client_ca_file.empty(); }
  // The current certificate's serial number (hex) and notAfter, for the log.
  std::string Describe() const;

 private:
  explicit TlsCredentials(TlsFiles files) : files_(std::move(files)) {}
  const TlsFiles files_;
  mutable std::mutex mu_;
  std::shared_ptr<TlsContext> current_;  // under mu_
};

}  // namespace inferloop::frontends
