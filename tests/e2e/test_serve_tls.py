#!/usr/bin/env python3
"""End-to-end tests of `inferloop serve --tls-cert FILE --tls-key FILE [--tls-client-ca FILE]`:
TLS on the REST, metrics and gRPC ports, mutual TLS, reload on SIGHUP, bad flags.

A throwaway CA, two server certificates (A and B: same key usage and SANs 127.0.0.1/localhost,
different serials), a client certificate and a stray key are made with the `openssl` CLI in a
temp dir. The repository: `simple` (examples/model_repository) and `stories`
(tests/data/llm/stories260k.gguf, for the OpenAI SDK over https).

- TestTls: tritonclient.http (ssl_options ca_certs) and tritonclient.grpc (root_certificates)
  infer; the OpenAI SDK (an httpx client verifying the CA) lists models and streams; /metrics on the metrics
  port over TLS; plain HTTP to the TLS port and a client that does not trust the CA fail and are
  counted in inferloop_tls_handshake_failures_total (plain HTTP gets a plaintext 400 saying so); a client that never starts the handshake is
  closed after --http-header-timeout-secs.
- TestMutualTls: with --tls-client-ca, REST and gRPC clients without a certificate fail, with the
  client certificate they infer.
- TestReload: requests loop on a kept-alive connection and on new connections while the files are
  replaced by certificate B and SIGHUP is sent: new connections then get B, the kept-alive one keeps
  A and stays up, no request fails; a broken key file is a tls_reload_failed that keeps B; the
  gRPC port picks up B by itself.
- TestBadFlags: a certificate without key, a missing file, a key not matching the certificate, a
  client CA without a certificate: exit 2 with a message naming the flag.

Usage: test_serve_tls.py --inferloop BUILD/inferloop [unittest args]
Exit status: 0 passed, 1 a failure.
"""
import http.client
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np
import openai
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import serve_harness as h  # noqa: E402

INFERLOOP = None
TMP = None   # certificates and the repository
REPO = None
STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path


def openssl(*args):
    subprocess.run(["openssl", *args], cwd=TMP, check=True, capture_output=True)


def path(name):
    return os.path.join(TMP, name)


def make_leaf(name, serial, ext):
    """name.key and name.pem signed by the test CA."""
    with open(path(name + ".ext"), "w") as f:
        f.write(ext + "basicConstraints=CA:FALSE\nauthorityKeyIdentifier=keyid,issuer\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
            "-subj", f"/CN={name}")
    openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", str(serial),
            "-days", "2", "-extfile", name + ".ext", "-out", name + ".pem")


def setUpModule():
    global TMP, REPO
    TMP = tempfile.mkdtemp(prefix="inferloop_tls_")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=inferloop test CA")
    server_ext = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
    make_leaf("server_a", 1001, server_ext)
    make_leaf("server_b", 1002, server_ext)
    make_leaf("client", 2001, "extendedKeyUsage=clientAuth\n")
    openssl("genrsa", "-out", "stray.key", "2048")
    REPO = path("repo")
    shutil.copytree(os.path.join(ROOT, "examples", "model_repository", "simple"), os.path.join(REPO, "simple"))
    os.makedirs(os.path.join(REPO, "stories", "1"))
    shutil.copy(STORIES, os.path.join(REPO, "stories", "1", "model.gguf"))


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def der(pem_file):
    with open(pem_file) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def client_context(with_cert=False, ca=True):
    ctx = ssl.create_default_context(cafile=path("ca.pem") if ca else None)
    if with_cert:
        ctx.load_cert_chain(path("client.pem"), path("client.key"))
    return ctx


def https(port, method, target, ctx=None, body=None):
    """One request on a new TLS connection: (status, body bytes)."""
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=ctx or client_context())
    try:
        conn.request(method, target, body=body)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def peer_der(port, ctx=None, alpn=None):
    """The DER certificate the server presents on a new connection."""
    ctx = ctx or client_context()
    if alpn:
        ctx.set_alpn_protocols(alpn)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return s.getpeercert(binary_form=True)


def handshake_failures(server):
    status, body = https(server.metrics_port, "GET", "/metrics")
    assert status == 200, status
    return h.metric_sum(body.decode(), "inferloop_tls_handshake_failures_total")


def simple_inputs(mod):
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.full((1, 16), 7, dtype=np.int32)
    ins = [mod.InferInput("INPUT0", a.shape, "INT32"), mod.InferInput("INPUT1", b.shape, "INT32")]
    ins[0].set_data_from_numpy(a)
    ins[1].set_data_from_numpy(b)
    return ins, a, b


def tls_server(*extra, cert="server_a", key=None):
    return h.Server(INFERLOOP, REPO, "--tls-cert", path(cert + ".pem"), "--tls-key", path((key or cert) + ".key"),
                    "--model-control-mode", "explicit", "--load-model", "simple", *extra)


class TestTls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = tls_server("--load-model", "stories", "--http-header-timeout-secs", "1")

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def test_tritonclient_http_infers(self):
        c = httpclient.InferenceServerClient(self.server.http_url, ssl=True, ssl_options={"ca_certs": path("ca.pem")})
        ins, a, b = simple_inputs(httpclient)
        r = c.infer("simple", ins)
        np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
        np.testing.assert_array_equal(r.as_numpy("OUTPUT1"), a - b)
        c.close()

    def test_tritonclient_grpc_infers(self):
        c = grpcclient.InferenceServerClient(self.server.grpc_url, ssl=True, root_certificates=path("ca.pem"))
        ins, a, b = simple_inputs(grpcclient)
        r = c.infer("simple", ins)
        np.testing.assert_array_equal(r.as_numpy("OUTPUT0"), a + b)
        # The same port refuses a plaintext client.
        plain = grpcclient.InferenceServerClient(self.server.grpc_url)
        with self.assertRaises(InferenceServerException):
            plain.is_server_live(client_timeout=5)

    def test_openai_sdk_over_https(self):
        http_client = openai.DefaultHttpxClient(verify=client_context())
        client = openai.OpenAI(base_url=f"https://127.0.0.1:{self.server.http_port}/v1", api_key="none",
                               http_client=http_client, max_retries=0, timeout=60)
        self.assertIn("stories", [m.id for m in client.models.list().data])
        out = client.completions.create(model="stories", prompt="Once upon a time", max_tokens=4, temperature=0)
        self.assertTrue(out.choices[0].text)
        # A streamed answer (server-sent events, chunked) over TLS.
        pieces = list(client.completions.create(model="stories", prompt="Once upon a time", max_tokens=8,
                                                temperature=0, stream=True))
        self.assertGreater(len(pieces), 1)
        self.assertEqual("".join(p.choices[0].text for p in pieces if p.choices),
                         client.completions.create(model="stories", prompt="Once upon a time", max_tokens=8,
                                                   temperature=0).choices[0].text)

    def test_metrics_port_over_tls(self):
        status, body = https(self.server.metrics_port, "GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertIn("inferloop_tls_handshake_failures_total", body.decode())
        status, _, _ = h.request(self.server.metrics_port, "GET", "/metrics", timeout=10)
        self.assertEqual(status, 400)  # plain HTTP: the plaintext "this port speaks TLS only"

    def test_plain_http_and_untrusting_clients_fail_and_are_counted(self):
        before = handshake_failures(self.server)
        status, _, body = h.request(self.server.http_port, "GET", "/v2/health/ready", timeout=10)
        self.assertEqual(status, 400)
        self.assertIn(b"this port speaks TLS only", body)
        with self.assertRaises(ssl.SSLCertVerificationError):
            https(self.server.http_port, "GET", "/v2/health/ready", ctx=client_context(ca=False))
        h.wait_for("two more handshake failures", lambda: handshake_failures(self.server) >= before + 2, timeout=10)

    def test_stalled_handshake_is_closed_by_the_header_timeout(self):
        before = h.metric_sum(https(self.server.metrics_port, "GET", "/metrics")[1].decode(),
                              "inferloop_http_connections_closed_total", reason="header_timeout")
        start = time.time()
        with socket.create_connection(("127.0.0.1", self.server.http_port), timeout=30) as s:
            self.assertEqual(s.recv(1), b"")  # closed by the server, nothing sent
        print(f"  stalled handshake closed after {time.time() - start:.2f} s (header timeout 1 s)")
        after = h.metric_sum(https(self.server.metrics_port, "GET", "/metrics")[1].decode(),
                             "inferloop_http_connections_closed_total", reason="header_timeout")
        self.assertEqual(after, before + 1)


class TestMutualTls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = tls_server("--tls-client-ca", path("ca.pem"))
        listening = cls.server.find_events("server_listening")[0]
        assert listening["tls"] == "mutual", listening

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def test_rest_needs_a_client_certificate(self):
        before = handshake_failures_mutual(self.server)
        with self.assertRaises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            https(self.server.http_port, "GET", "/v2/health/ready")
        c = httpclient.InferenceServerClient(
            self.server.http_url, ssl=True,
            ssl_options={"ca_certs": path("ca.pem"), "certfile": path("client.pem"), "keyfile": path("client.key")})
        ins, a, b = simple_inputs(httpclient)
        np.testing.assert_array_equal(c.infer("simple", ins).as_numpy("OUTPUT0"), a + b)
        c.close()
        h.wait_for("a handshake failure", lambda: handshake_failures_mutual(self.server) >= before + 1, timeout=10)

    def test_grpc_needs_a_client_certificate(self):
        # tritonclient.grpc takes the PEM files' paths.
        ca = path("ca.pem")
        c = grpcclient.InferenceServerClient(self.server.grpc_url, ssl=True, root_certificates=ca)
        with self.assertRaises(InferenceServerException):
            c.is_server_live(client_timeout=5)
        c = grpcclient.InferenceServerClient(self.server.grpc_url, ssl=True, root_certificates=ca,
                                             private_key=path("client.key"), certificate_chain=path("client.pem"))
        ins, a, b = simple_inputs(grpcclient)
        np.testing.assert_array_equal(c.infer("simple", ins).as_numpy("OUTPUT0"), a + b)


def handshake_failures_mutual(server):
    status, body = https(server.metrics_port, "GET", "/metrics", ctx=client_context(with_cert=True))
    assert status == 200, status
    return h.metric_sum(body.decode(), "inferloop_tls_handshake_failures_total")


class TestReload(unittest.TestCase):
    def install(self, name, live):
        """Copies name.pem/.key over live.pem/.key (each by an atomic rename)."""
        for ext in (".key", ".pem"):
            shutil.copy(path(name + ext), path(live + ext + ".tmp"))
            os.replace(path(live + ext + ".tmp"), path(live + ext))

    def test_sighup_reloads_without_dropping_connections(self):
        self.install("server_a", "live")
        with tls_server(cert="live") as server:
            self.assertEqual(peer_der(server.http_port), der(path("server_a.pem")))
            stop = threading.Event()
            counts = {"kept": 0, "new": 0, "failed": []}
            kept = http.client.HTTPSConnection("127.0.0.1", server.http_port, timeout=30, context=client_context())

            def kept_alive_loop():
                while not stop.is_set():
                    try:
                        kept.request("GET", "/v2/health/ready")
                        r = kept.getresponse()
                        r.read()
                        if r.status != 200:
                            counts["failed"].append(f"kept: {r.status}")
                        counts["kept"] += 1
                    except Exception as e:  # noqa: BLE001 (any failure is what the test counts)
                        counts["failed"].append(f"kept: {e!r}")
                        return

            def new_connection_loop():
                while not stop.is_set():
                    try:
                        status, _ = https(server.http_port, "GET", "/v2/health/ready")
                        if status != 200:
                            counts["failed"].append(f"new: {status}")
                        counts["new"] += 1
                    except Exception as e:  # noqa: BLE001
                        counts["failed"].append(f"new: {e!r}")

            threads = [threading.Thread(target=kept_alive_loop), threading.Thread(target=new_connection_loop)]
            for t in threads:
                t.start()
            time.sleep(0.5)
            self.install("server_b", "live")
            n = len(server.events)
            server.proc.send_signal(signal.SIGHUP)
            ev = server.wait_event(("tls_reloaded", "tls_reload_failed"), timeout=10, after=n)
            self.assertEqual(ev["event"], "tls_reloaded", ev)
            self.assertIn("serial=03EA", ev["certificate"])  # 1002
            self.assertEqual(peer_der(server.http_port), der(path("server_b.pem")))
            self.assertEqual(peer_der(server.metrics_port), der(path("server_b.pem")))
            time.sleep(0.5)
            stop.set()
            for t in threads:
                t.join(30)
            # The kept-alive connection is still the one made with certificate A.
            self.assertEqual(kept.sock.getpeercert(binary_form=True), der(path("server_a.pem")))
            kept.close()
            print(f"  across the reload: {counts['kept']} requests on the kept-alive connection, "
                  f"{counts['new']} on new connections, {len(counts['failed'])} failed")
            self.assertEqual(counts["failed"], [])
            self.assertGreater(counts["kept"], 0)
            self.assertGreater(counts["new"], 0)

            # A broken key: the reload fails, certificate B stays.
            with open(path("live.key"), "w") as f:
                f.write("not a key\n")
            n = len(server.events)
            server.proc.send_signal(signal.SIGHUP)
            ev = server.wait_event(("tls_reloaded", "tls_reload_failed"), timeout=10, after=n)
            self.assertEqual(ev["event"], "tls_reload_failed", ev)
            self.assertIn("--tls-key", ev["reason"])
            self.assertEqual(peer_der(server.http_port), der(path("server_b.pem")))
            self.install("server_b", "live")

            # gRPC follows the files by itself (refresh every 5 s).
            start = time.time()
            h.wait_for("the gRPC port to present certificate B",
                       lambda: peer_der(server.grpc_port, alpn=["h2"]) == der(path("server_b.pem")), timeout=20)
            print(f"  gRPC presented certificate B {time.time() - start:.1f} s after the last file change")


class TestBadFlags(unittest.TestCase):
    def serve(self, *flags):
        p = subprocess.run([INFERLOOP, "serve", "--model-repository", REPO, "--http-port", "0", "--grpc-port", "0",
                            "--metrics-port", "0", *flags], capture_output=True, text=True, timeout=60)
        return p.returncode, p.stderr

    def test_bad_flags_exit_2_naming_the_flag(self):
        cases = [
            (["--tls-cert", path("server_a.pem")], "--tls-cert needs --tls-key"),
            (["--tls-key", path("server_a.key")], "--tls-key needs --tls-cert"),
            (["--tls-cert", path("missing.pem"), "--tls-key", path("server_a.key")], "--tls-cert '"),
            (["--tls-cert", path("server_a.pem"), "--tls-key", path("missing.key")], "--tls-key '"),
            (["--tls-cert", path("server_a.pem"), "--tls-key", path("stray.key")], "does not match the certificate"),
            (["--tls-cert", path("server_a.key"), "--tls-key", path("server_a.key")], "--tls-cert '"),
            (["--tls-cert", path("server_a.pem"), "--tls-key", path("server_a.pem")], "--tls-key '"),
            (["--tls-cert", path("server_a.pem"), "--tls-key", path("server_a.key"), "--tls-client-ca",
              path("missing.pem")], "--tls-client-ca '"),
            (["--tls-client-ca", path("ca.pem")], "--tls-client-ca needs --tls-cert"),
        ]
        for flags, message in cases:
            with self.subTest(flags=flags):
                rc, err = self.serve(*flags)
                self.assertEqual(rc, 2, err)
                self.assertIn(message, err)
                print(f"  {err.strip()}")


if __name__ == "__main__":
    h.run_tests(set_inferloop)
