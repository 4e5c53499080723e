#!/usr/bin/env python3
"""`inferloop serve --llm-kv-type q8_0`: the KV cache in Q8_0 blocks, end to end.

A temporary repository holds two random models made by scripts/make_llm_models.py: `hd32`
(shape tiny-hd32, head dim 32: fits Q8_0) and `hd16` (shape tiny, head dim 16: does not). Checks:
the KV gauges count the Q8_0 pool's blocks (the same MiB hold 1.88x the F16 blocks); the head-dim-16
model fails to load with a reason and is not served; 8 concurrent greedy completions (batched by
the engine) each equal `inferloop generate --kv-type q8_0` alone; after them no block is held by a
sequence. (Token equality with llama.cpp's Q8_0 cache: test_llama_cpp.py.)

Usage: test_llm_kv_type.py --inferloop BUILD/inferloop [unittest args]
Exit status: 0 passed, 1 a failure.
"""
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
# tiny-hd32: 2 layers, 2 KV heads of 32. Bytes of one 16-position block (every layer's K and V):
LAYERS, KV_DIM, BLOCK = 2, 64, 16
BLOCK_BYTES = {"f16": LAYERS * 2 * BLOCK * KV_DIM * 2, "q8_0": LAYERS * 2 * BLOCK * (KV_DIM // 32 * 34)}
PROMPTS = ["Once upon a time", "The little dog", "Lily and Ben went to the park. They", "a b c d e f g h",
           "hello", "It was a sunny day and", "zz yy xx", "The end"]


class TestKvTypeQ8(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_kvtype_")
        for name, shape in (("hd32", "tiny-hd32"), ("hd16", "tiny")):
            os.makedirs(os.path.join(cls.tmp, name, "1"))
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_llm_models.py"), "random",
                            os.path.join(cls.tmp, name, "1", "model.gguf"), "--shape", shape, "--type", "Q8_0",
                            "--std", "0.5", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
        cls.model = os.path.join(cls.tmp, "hd32", "1", "model.gguf")
        # hd16 cannot load with q8_0: the server runs, not ready (as with any model that fails to load).
        cls.server = h.Server(INFERLOOP, cls.tmp, "--llm-kv-type", "q8_0", "--llm-kv-cache-mb", "1", wait_ready=False)
        ev = cls.server.wait_event(("server_ready", "server_not_ready"), 120)
        assert ev["event"] == "server_not_ready" and "hd16" in ev["reason"], ev

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "server"):
            cls.server.terminate()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def gauge(self, server, name):
        v = h.metric_value(h.metrics(server.http_port), name, model="hd32")
        self.assertIsNotNone(v, name)
        return int(v)

    def test_gauges_count_the_q8_0_pool(self):
        want = (1 << 20) // BLOCK_BYTES["q8_0"]  # 240
        loaded = [e for e in self.server.find_events("model_version_loaded") if e["model"] == "hd32"]
        self.assertEqual(len(loaded), 1)
        self.assertEqual(loaded[0]["kv_type"], "q8_0")
        self.assertEqual(int(loaded[0]["kv_blocks"]), want)
        # (Before any request; the other tests leave no block held by a sequence either.)
        self.assertEqual(self.gauge(self.server, "inferloop_llm_kv_blocks_free") +
                         self.gauge(self.server, "inferloop_llm_kv_blocks_used"), want)
        with h.Server(INFERLOOP, self.tmp, "--llm-kv-cache-mb", "1") as f16:
            self.assertEqual(self.gauge(f16, "inferloop_llm_kv_blocks_free"), (1 << 20) // BLOCK_BYTES["f16"])  # 128
            f16.terminate()
        self.assertAlmostEqual(BLOCK_BYTES["f16"] / BLOCK_BYTES["q8_0"], 64 / 34)

    def test_head_dim_16_model_is_refused(self):
        failed = [e for e in self.server.find_events("model_load_failed") if e["model"] == "hd16"]
        self.assertEqual(len(failed), 1, self.server.log_text())
        self.assertIn("KV cache type q8_0 needs a head dim that is a multiple of 32", failed[0]["reason"])
        self.assertIn("head dim is 16", failed[0]["reason"])
        status, body = h.get_json(self.server.http_port, "/v1/models")
        self.assertEqual(status, 200)
        self.assertEqual([m["id"] for m in body["data"]], ["hd32"])

    def generate_alone(self, prompt, n, kv_type="q8_0"):
        out = subprocess.run([INFERLOOP, "generate", self.model, "-p", prompt, "-n", str(n), "--temp", "0", "-t", "1",
                              "--kv-type", kv_type], check=True, capture_output=True).stdout.decode("utf-8", "replace")
        self.assertTrue(out.startswith(prompt) and out.endswith("\n"), out)
        return out[len(prompt):-1]

    def test_batched_completions_equal_generate_alone(self):
        n = 24
        results = {}

        def run(i):
            results[i] = h.post_json(self.server.http_port, "/v1/completions",
                                     {"model": "hd32", "prompt": PROMPTS[i], "max_tokens": n, "temperature": 0},
                                     timeout=120)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(PROMPTS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, p in enumerate(PROMPTS):
            status, _, body = results[i]
            with self.subTest(prompt=p):
                self.assertEqual(status, 200, body)
                self.assertEqual(body["choices"][0]["text"], self.generate_alone(p, n))
        # The cache type is in effect: the F16 cache continues this prompt differently.
        self.assertNotEqual(self.generate_alone(PROMPTS[1], n, "f16"), results[1][2]["choices"][0]["text"])
        # Finished sequences hold no block; only the prefix cache may keep some (idle).
        self.assertEqual(self.gauge(self.server, "inferloop_llm_kv_blocks_used"),
                         self.gauge(self.server, "inferloop_llm_kv_blocks_cached_idle"))
        self.assertGreater(self.gauge(self.server, "inferloop_llm_kv_blocks_cached_idle"), 0)


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path


if __name__ == "__main__":
    h.run_tests(set_inferloop, skipped_is_failure=True)
