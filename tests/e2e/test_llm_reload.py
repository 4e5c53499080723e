#!/usr/bin/env python3
"""`inferloop serve --model-control-mode poll` with GGUF models: add, replace, fail, remove.

The server starts on a repository with no LLM model and polls it every 0.2 s. Random models made by
scripts/make_llm_models.py (shape small, seeds 1, 2, 3: three different models) are moved in and
out, every step awaited through the server's events (never a bare sleep):
- a model folder moved in is listed by /v1/models and its greedy output equals `inferloop generate`
  on the file;
- the file replaced while 25 requests are accepted (1 running, the rest queued behind
  --llm-max-sequences 1, a stream among them): the old engine finishes every one of them with the
  old file's output (the stream complete, finish_reason and all), a request sent after the reload
  gets the new file's output, the old engine is then freed, and the LLM metrics keep counting under
  the same series;
- a broken file in a higher version folder is refused with model_load_failed and the previous
  file keeps serving; a valid file there then replaces it (the highest version wins), and when
  that version folder is deleted, version 1 serves again;
- the folder removed: the model is unloaded, requests get the OpenAI-shaped 404 and its metric
  series are gone.

Usage: test_llm_reload.py --inferloop BUILD/inferloop [unittest args]
Exit status: 0 passed, 1 a failure.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import serve_harness as h  # noqa: E402

INFERLOOP = None
PROMPT = "Once upon a time"
QUEUED = 24  # requests queued behind the running one when the file is replaced
N = 300      # max_tokens of those requests


def stream_completion(port, body, out):
    """POSTs a streamed completion and collects its SSE events into out["events"], then sets out["status"]."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.request("POST", "/v1/completions", json.dumps(dict(body, stream=True)).encode(),
                     {"Content-Type": "application/json"})
        r = conn.getresponse()
        out["status"] = r.status
        events = []
        for raw in r:
            line = raw.decode().strip()
            if line.startswith("data: "):
                events.append(line[len("data: "):])
        out["events"] = events
    finally:
        conn.close()


class TestLlmReload(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_llm_reload_")
        cls.repo = os.path.join(cls.tmp, "repo")
        cls.files = os.path.join(cls.tmp, "files")
        os.makedirs(cls.repo)
        os.makedirs(cls.files)
        for seed in (1, 2, 3):
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py"), "random",
                            cls.path(seed), "--shape", "small", "--type", "Q8_0", "--std", "0.5",
                            "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
        cls.server = h.Server(INFERLOOP, cls.repo, "--model-control-mode", "poll", "--repository-poll-secs", "0.2",
                              "--llm-max-sequences", "1", "--llm-kv-cache-mb", "16")

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "server"):
            cls.server.terminate()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def path(cls, seed):
        return os.path.join(cls.files, f"seed{seed}.gguf")

    def generate(self, seed, n):
        out = subprocess.run([INFERLOOP, "generate", self.path(seed), "-p", PROMPT, "-n", str(n), "--temp", "0",
                              "-t", "1"], check=True, capture_output=True).stdout.decode("utf-8", "replace")
        self.assertTrue(out.startswith(PROMPT) and out.endswith("\n"), out)
        return out[len(PROMPT):-1]

    def complete(self, n, timeout=120):
        return h.post_json(self.server.http_port, "/v1/completions",
                           {"model": "m", "prompt": PROMPT, "max_tokens": n, "temperature": 0}, timeout=timeout)

    def install(self, seed, version):
        """Puts seed's file at repo/m/<version>/model.gguf atomically (a rename, as a deploy should)."""
        d = os.path.join(self.repo, "m", str(version))
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, ".model.gguf.tmp")
        shutil.copy(self.path(seed), tmp)
        os.replace(tmp, os.path.join(d, "model.gguf"))

    def wait(self, event, version=None):
        """The first `event` for model m (and `version`) logged after the mark and not returned before.

        Events of one step may come in either order (an engine drained and freed before the poller
        logs the load that replaced it), so every wait searches from the mark."""
        while True:
            with self.server.lock:
                seen = len(self.server.events)
                for i, e in enumerate(self.server.events[self.mark:], self.mark):
                    if (e.get("event") == event and e.get("model") == "m" and (version is None or e.get("version") == version)
                            and i not in self.consumed):
                        self.consumed.add(i)
                        return e
            self.server.wait_event(event, timeout=120, after=seen)  # the next one of that name

    def set_mark(self):
        with self.server.lock:
            self.mark = len(self.server.events)
        self.consumed = set()

    def metric(self, name, **labels):
        return h.metric_value(h.metrics(self.server.metrics_port), name, model="m", **labels)

    def wait_accepted(self, n):
        """Waits until the engine has accepted n requests since the first one (queued, running or finished)."""
        while True:
            text = h.metrics(self.server.metrics_port)
            seen = sum(h.metric_value(text, name, model="m") or 0
                       for name in ("inferloop_llm_waiting_sequences", "inferloop_llm_running_sequences"))
            seen += sum(h.metric_value(text, "inferloop_llm_requests_total", model="m", finish_reason=r) or 0
                        for r in ("stop", "length")) - 1
            if seen >= n:
                return
            threading.Event().wait(0.01)  # polls the metrics

    def test_add_replace_fail_remove(self):
        port = self.server.http_port
        status, body = h.get_json(port, "/v1/models")
        self.assertEqual((status, body["data"]), (200, []))

        # Added: a folder moved in whole.
        self.set_mark()
        staged = os.path.join(self.tmp, "staged_m")
        os.makedirs(os.path.join(staged, "1"))
        shutil.copy(self.path(1), os.path.join(staged, "1", "model.gguf"))
        os.rename(staged, os.path.join(self.repo, "m"))
        v1 = "1"
        loaded = self.wait("model_version_loaded", v1)
        self.assertEqual(loaded["kind"], "gguf")
        self.assertEqual(loaded["path"], os.path.join(self.repo, "m", "1", "model.gguf"))
        self.assertEqual(loaded["reload"], "false")
        status, body = h.get_json(port, "/v1/models")
        self.assertEqual([m["id"] for m in body["data"]], ["m"])
        old_text = self.generate(1, N)
        status, _, body = self.complete(N)
        self.assertEqual(status, 200, body)
        self.assertEqual(body["choices"][0]["text"], old_text)
        self.assertEqual(self.metric("inferloop_llm_requests_total", finish_reason=body["choices"][0]["finish_reason"]), 1)

        # Replaced while requests are accepted: one running, QUEUED waiting (a stream last).
        results = {}

        def run(i):
            results[i] = self.complete(N, timeout=300)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(QUEUED)]
        for t in threads:
            t.start()
        self.wait_accepted(QUEUED)
        stream = {}
        streamer = threading.Thread(target=stream_completion, args=(
            port, {"model": "m", "prompt": PROMPT, "max_tokens": N, "temperature": 0}, stream))
        streamer.start()
        self.wait_accepted(QUEUED + 1)
        self.set_mark()
        self.install(2, 1)
        draining = self.wait("llm_engine_draining", v1)
        # The swap happened with the accepted requests still in the old engine.
        self.assertGreater(int(draining["running"]) + int(draining["waiting"]), 1, draining)
        self.assertEqual(self.wait("model_version_loaded", v1)["reload"], "true")
        new_text = self.generate(2, N)
        self.assertNotEqual(new_text, old_text)
        status, _, body = self.complete(N)
        self.assertEqual(status, 200, body)
        text = body["choices"][0]["text"]
        # Says which model answered when it fails (the old one, or neither: a wrong answer).
        self.assertEqual(text, new_text, f"the old model's text: {text == old_text}; common prefix "
                         f"{len(os.path.commonprefix([text, new_text]))} of {len(new_text)} characters")
        for t in threads:
            t.join()
        streamer.join()
        for i in range(QUEUED):
            status, _, body = results[i]
            self.assertEqual(status, 200, body)
            self.assertEqual(body["choices"][0]["text"], old_text, f"request {i}")
        self.assertEqual(stream["status"], 200)
        self.assertEqual(stream["events"][-1], "[DONE]")
        chunks = [json.loads(e) for e in stream["events"][:-1]]
        self.assertEqual("".join(c["choices"][0]["text"] for c in chunks if c["choices"]), old_text)
        self.assertIn(chunks[-1]["choices"][0]["finish_reason"], ("length", "stop"))
        self.wait("model_version_unloaded", v1)
        # The series lived on: 1 + QUEUED + the stream + the one after the reload.
        fin = sum(self.metric("inferloop_llm_requests_total", finish_reason=r) or 0 for r in ("stop", "length"))
        self.assertEqual(fin, QUEUED + 3)
        self.assertEqual(self.metric("inferloop_llm_running_sequences"), 0)
        self.assertGreater(self.metric("inferloop_llm_kv_blocks_free"), 0)

        # A broken file in a higher version: refused, the serving one stays.
        self.set_mark()
        v2 = "2"
        v2_file = os.path.join(self.repo, "m", "2", "model.gguf")
        os.makedirs(os.path.dirname(v2_file))
        with open(v2_file + ".tmp", "wb") as f:
            f.write(b"GGUF" + b"\0" * 64)
        os.replace(v2_file + ".tmp", v2_file)
        failed = self.wait("model_load_failed", v2)
        self.assertIn("model.gguf", failed["reason"])
        status, _, body = self.complete(N)
        self.assertEqual((status, body["choices"][0]["text"]), (200, new_text))
        # Fixed: version 2 (the highest) replaces version 1.
        self.set_mark()
        self.install(3, 2)
        self.assertEqual(self.wait("model_version_loaded", v2)["reload"], "true")
        status, _, body = self.complete(N)
        self.assertEqual((status, body["choices"][0]["text"]), (200, self.generate(3, N)))
        self.wait("model_version_unloaded", v1)
        # Version 2 deleted: version 1 (seed 2's file) is the highest again and serves.
        self.set_mark()
        shutil.rmtree(os.path.dirname(v2_file))
        self.assertEqual(self.wait("model_version_loaded", v1)["reload"], "true")
        status, _, body = self.complete(N)
        self.assertEqual((status, body["choices"][0]["text"]), (200, new_text))
        self.wait("model_version_unloaded", v2)

        # Removed: unloaded, then 404 in the OpenAI shape and no series left.
        self.set_mark()
        shutil.rmtree(os.path.join(self.repo, "m"))
        self.wait("model_unloaded")
        status, _, body = self.complete(4)
        self.assertEqual(status, 404, body)
        self.assertEqual(body["error"]["code"], "model_not_found")
        status, body = h.get_json(port, "/v1/models")
        self.assertEqual(body["data"], [])
        self.assertIsNone(self.metric("inferloop_llm_requests_total", finish_reason="length"))
        self.assertIsNone(self.metric("inferloop_llm_kv_blocks_free"))
        self.assertEqual(self.server.find_events("raw"), [])


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path


if __name__ == "__main__":
    h.run_tests(set_inferloop, skipped_is_failure=True)
