#include "frontends/tls.h"

#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/context.hpp>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

namespace inferloop::frontends {

namespace ssl = boost::asio::ssl;

struct TlsContext {
  ssl::context ctx{ssl::context::tls_server};
  std::string description;  // serial and notAfter of the certificate
};

ssl::context& AsioSslContext(TlsContext& context) { return context.ctx; }

namespace {

Result<std::string> ReadFile(const std::string& name, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(name + " '" + path + "': cannot read: " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return Status::InvalidArgument(name + " '" + path + "': cannot read");
  return s.str();
}

// The reason OpenSSL gave (its error queue, emptied), or `fallback`.
std::string OpenSslReason(const boost::system::error_code& ec, const char* fallback) {
  std::string reason = ec ? ec.message() : "";
  unsigned long e = 0;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (reason.empty()) reason = buf;
  }
  return reason.empty() ? fallback : reason;
}

std::string DescribeCertificate(SSL_CTX* ctx) {
  X509* cert = SSL_CTX_get0_certificate(ctx);
  if (cert == nullptr) return "";
  std::string out;
  if (BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr)) {
    if (char* hex = BN_bn2hex(bn)) {
      out = hex;
      OPENSSL_free(hex);
    }
    BN_free(bn);
  }
  if (BIO* bio = BIO_new(BIO_s_mem())) {
    if (ASN1_TIME_print(bio, X509_get0_notAfter(cert)) == 1) {
      char* data = nullptr;
      const long n = BIO_get_mem_data(bio, &data);
      out += std::string(" not_after=") + std::string(data, static_cast<size_t>(n));
    }
    BIO_free(bio);
  }
  return "serial=" + out;
}

Result<std::shared_ptr<TlsContext>> BuildContext(const TlsFiles& f) {
  auto cert = ReadFile(f.cert_name, f.cert_file);
  if (!cert.ok()) return cert.status();
  auto key = ReadFile(f.key_name, f.key_file);
  if (!key.ok()) return key.status();
  std::string ca;
  if (!f.client_ca_file.empty()) {
    auto c = ReadFile(f.client_ca_name, f.client_ca_file);
    if (!c.ok()) return c.status();
    ca = std::move(c).value();
  }
  ERR_clear_error();
  auto t = std::make_shared<TlsContext>();
  boost::system::error_code ec;
  t->ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                         ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::no_compression |
                         ssl::context::single_dh_use,
                     ec);
  SSL_CTX* native = t->ctx.native_handle();
  if (ec || SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1) {
    return Status::Internal("TLS: cannot set up the OpenSSL context: " + OpenSslReason(ec, "unknown error"));
  }
  // The key first: a certificate then set that does not match it unsets it (checked below).
  t->ctx.use_private_key(boost::asio::buffer(key.value()), ssl::context::pem, ec);
  if (ec) {
    return Status::InvalidArgument(f.key_name + " '" + f.key_file +
                                   "': no PEM private key in it (OpenSSL: " + OpenSslReason(ec, "none found") + ")");
  }
  t->ctx.use_certificate_chain(boost::asio::buffer(cert.value()), ec);
  if (ec) {
    return Status::InvalidArgument(f.cert_name + " '" + f.cert_file +
                                   "': no PEM certificate in it (OpenSSL: " + OpenSslReason(ec, "none found") + ")");
  }
  ERR_clear_error();
  if (SSL_CTX_check_private_key(native) != 1) {
    return Status::InvalidArgument(f.key_name + " '" + f.key_file + "' does not match the certificate in " +
                                   f.cert_name + " '" + f.cert_file + "'");
  }
  if (!ca.empty()) {
    t->ctx.add_certificate_authority(boost::asio::buffer(ca), ec);
    if (ec) {
      return Status::InvalidArgument(f.client_ca_name + " '" + f.client_ca_file +
                                     "': no PEM certificate in it (OpenSSL: " + OpenSslReason(ec, "none found") + ")");
    }
    // Tell clients which CA to present a certificate from.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(f.client_ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(native, names);
    }
    t->ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    // Session resumption with client verification needs a session id context.
    static const unsigned char kSessionContext[] = "inferloop";
    SSL_CTX_set_session_id_context(native, kSessionContext, sizeof(kSessionContext) - 1);
  }
  ERR_clear_error();
  t->description = DescribeCertificate(native);
  return t;
}

}  // namespace

Result<std::shared_ptr<TlsCredentials>> TlsCredentials::Load(TlsFiles files) {
  auto ctx = BuildContext(files);
  if (!ctx.ok()) return ctx.status();
  std::shared_ptr<TlsCredentials> c(new TlsCredentials(std::move(files)));
  c->current_ = std::move(ctx).value();
  return c;
}

Status TlsCredentials::Reload() {
  auto ctx = BuildContext(files_);
  if (!ctx.ok()) return ctx.status();
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(ctx).value();
  return Status::Ok();
}

std::shared_ptr<TlsContext> TlsCredentials::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

std::string TlsCredentials::Describe() const { return Current()->description; }

}  // namespace inferloop::frontends
