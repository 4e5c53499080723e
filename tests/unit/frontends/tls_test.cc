// TlsCredentials (load errors, reload keeping the old context on failure) and HttpServer over TLS
// (pipelined keep-alive requests with a large body, plain HTTP on the TLS port, a stalled
// handshake closed by the header timeout), with certificates made here by OpenSSL and an OpenSSL
// client on a POSIX socket.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "frontends/http_server.h"
#include "frontends/tls.h"
#include "http_test_client.h"

namespace inferloop::frontends {
namespace {

namespace fs = std::filesystem;

// A temp dir with <name>.pem / <name>.key: self-signed P-256 certificates (serial given).
class CertDir {
 public:
  CertDir() {
    char tmpl[] = "/tmp/inferloop_tls_test_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~CertDir() { fs::remove_all(dir_); }
  std::string Path(const std::string& file) const { return (fs::path(dir_) / file).string(); }

  void Make(const std::string& name, long serial) {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
    X509_gmtime_adj(X509_getm_notBefore(cert), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
    X509_set_pubkey(cert, key);
    X509_NAME* subject = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("localhost"), -1,
                               -1, 0);
    X509_set_issuer_name(cert, subject);
    X509_sign(cert, key, EVP_sha256());
    FILE* f = std::fopen(Path(name + ".pem").c_str(), "w");
    PEM_write_X509(f, cert);
    std::fclose(f);
    f = std::fopen(Path(name + ".key").c_str(), "w");
    PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    X509_free(cert);
    EVP_PKEY_free(key);
  }
  TlsFiles Files(const std::string& cert, const std::string& key) const {
    TlsFiles f;
    f.cert_file = Path(cert + ".pem");
    f.key_file = Path(key + ".key");
    return f;
  }

 private:
  std::string dir_;
};

// A blocking TLS client trusting `ca_file`; empty strings from Read* mean closed or failed.
class TlsClient {
 public:
  TlsClient(uint16_t port, const std::string& ca_file) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{testing::kIoTimeoutSeconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return;
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    connected_ = SSL_connect(ssl_) == 1;
  }
  ~TlsClient() {
    if (ssl_) SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  bool connected() const { return connected_; }
  long PeerSerial() const {
    X509* peer = SSL_get1_peer_certificate(ssl_);
    long serial = peer ? ASN1_INTEGER_get(X509_get0_serialNumber(peer)) : -1;
    X509_free(peer);
    return serial;
  }
  bool Write(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      const int n = SSL_write(ssl_, data.data() + done, static_cast<int>(data.size() - done));
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  // Everything until the server closes.
  std::string ReadAll() {
    std::string out;
    char buf[16384];
    for (;;) {
      const int n = SSL_read(ssl_, buf, sizeof(buf));
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool connected_ = false;
};

void EchoSize(HttpRequest req, HttpResponder respond) {
  HttpResponse r;
  r.body = req.target + " " + std::to_string(req.body.size());
  respond(std::move(r));
}

TEST(TlsCredentials, LoadErrorsNameTheFile) {
  CertDir d;
  d.Make("a", 1);
  d.Make("b", 2);
  TlsFiles f = d.Files("a", "a");
  f.cert_file = d.Path("missing.pem");
  f.cert_name = "--tls-cert";
  auto r = TlsCredentials::Load(f);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--tls-cert '" + d.Path("missing.pem") + "': cannot read"), std::string::npos)
      << r.status().message();
  r = TlsCredentials::Load(d.Files("a", "b"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not match the certificate"), std::string::npos) << r.status().message();
  f = d.Files("a", "a");
  f.key_file = d.Path("a.pem");
  r = TlsCredentials::Load(f);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no PEM private key"), std::string::npos) << r.status().message();
  EXPECT_TRUE(TlsCredentials::Load(d.Files("a", "a")).ok());
}

TEST(TlsCredentials, ReloadSwapsTheContextOrKeepsTheOldOne) {
  CertDir d;
  d.Make("a", 1);
  d.Make("b", 2);
  fs::copy_file(d.Path("a.pem"), d.Path("live.pem"));
  fs::copy_file(d.Path("a.key"), d.Path("live.key"));
  auto creds = TlsCredentials::Load(d.Files("live", "live"));
  ASSERT_TRUE(creds.ok()) << creds.status().ToString();
  auto first = (*creds)->Current();
  EXPECT_NE((*creds)->Describe().find("serial=01"), std::string::npos) << (*creds)->Describe();
  std::ofstream(d.Path("live.key")) << "garbage\n";
  EXPECT_FALSE((*creds)->Reload().ok());
  EXPECT_EQ((*creds)->Current(), first);
  fs::copy_file(d.Path("b.pem"), d.Path("live.pem"), fs::copy_options::overwrite_existing);
  fs::copy_file(d.Path("b.key"), d.Path("live.key"), fs::copy_options::overwrite_existing);
  ASSERT_TRUE((*creds)->Reload().ok());
  EXPECT_NE((*creds)->Current(), first);
  EXPECT_NE((*creds)->Describe().find("serial=02"), std::string::npos) << (*creds)->Describe();
}

struct TlsServer {
  CertDir certs;
  std::shared_ptr<TlsCredentials> creds;
  std::atomic<int> handshake_failures{0};
  std::atomic<int> header_timeouts{0};
  std::unique_ptr<HttpServer> server;

  explicit TlsServer(std::chrono::milliseconds header_timeout = std::chrono::seconds(10)) {
    certs.Make("a", 1);
    certs.Make("b", 2);
    creds = TlsCredentials::Load(certs.Files("a", "a")).value();
    HttpServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.tls = creds;
    o.header_timeout = header_timeout;
    o.on_tls_handshake_failure = [this] { ++handshake_failures; };
    o.on_limit_close = [this](HttpLimitClose r) { header_timeouts += r == HttpLimitClose::kHeaderTimeout; };
    server = HttpServer::Start(o, EchoSize).value();
  }
};

TEST(HttpServerTls, PipelinedKeepAliveRequestsWithALargeBody) {
  TlsServer s;
  TlsClient c(s.server->port(), s.certs.Path("a.pem"));
  ASSERT_TRUE(c.connected());
  EXPECT_EQ(c.PeerSerial(), 1);
  const std::string big(1 << 20, 'x');
  ASSERT_TRUE(c.Write(testing::MakeHttpRequest("POST", "/one", "abc") + testing::MakeHttpRequest("POST", "/two", big) +
                      testing::MakeHttpRequest("GET", "/three", "", {{"Connection", "close"}})));
  const std::string all = c.ReadAll();
  const size_t one = all.find("/one 3"), two = all.find("/two 1048576"), three = all.find("/three 0");
  ASSERT_NE(one, std::string::npos) << all;
  ASSERT_NE(two, std::string::npos) << all;
  ASSERT_NE(three, std::string::npos) << all;
  EXPECT_LT(one, two);
  EXPECT_LT(two, three);
  EXPECT_EQ(s.handshake_failures.load(), 0);
}

TEST(HttpServerTls, ReloadAppliesToNewConnectionsOnly) {
  TlsServer s;
  TlsClient before(s.server->port(), s.certs.Path("a.pem"));
  ASSERT_TRUE(before.connected());
  fs::copy_file(s.certs.Path("b.pem"), s.certs.Path("a.pem"), fs::copy_options::overwrite_existing);
  fs::copy_file(s.certs.Path("b.key"), s.certs.Path("a.key"), fs::copy_options::overwrite_existing);
  ASSERT_TRUE(s.creds->Reload().ok());
  TlsClient after(s.server->port(), s.certs.Path("b.pem"));
  ASSERT_TRUE(after.connected());
  EXPECT_EQ(after.PeerSerial(), 2);
  // The connection made before the reload still works.
  ASSERT_TRUE(before.Write(testing::MakeHttpRequest("GET", "/old", "", {{"Connection", "close"}})));
  EXPECT_NE(before.ReadAll().find("/old 0"), std::string::npos);
}

TEST(HttpServerTls, PlainHttpGets400AndIsCounted) {
  TlsServer s;
  testing::TestConnection c(s.server->port());
  ASSERT_TRUE(c.connected());
  auto r = c.Roundtrip(testing::MakeHttpRequest("GET", "/x"));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("TLS only"), std::string::npos) << r.body;
  EXPECT_EQ(s.handshake_failures.load(), 1);
}

TEST(HttpServerTls, StalledHandshakeIsClosedByTheHeaderTimeout) {
  TlsServer s(std::chrono::milliseconds(300));
  testing::TestConnection c(s.server->port());
  ASSERT_TRUE(c.connected());
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_EQ(s.header_timeouts.load(), 1);
}

}  // namespace
}  // namespace inferloop::frontends
