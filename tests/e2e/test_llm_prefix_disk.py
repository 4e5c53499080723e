#!/usr/bin/env python3
"""`inferloop serve --llm-prefix-cache-dir DIR`: the LLM prefix cache's disk tier, end to end.

On tests/data/llm/stories260k.gguf (context 128: a prompt of about 70 tokens), one folder shared by successive servers:
- a server answers a long prompt cold and stops gracefully (SIGTERM): its cached KV blocks are
  written to DIR/<model identity>/*.ilkv;
- a restarted server answers the same prompt warm from disk: usage.prompt_tokens_details.cached_tokens
  counts the reused whole blocks, inferloop_llm_prefix_cache_hit_tokens_total{tier="disk"} the same,
  bytes are read, and the greedy output is identical to the cold one; asked again, the blocks come
  from memory (tier="memory");
- damaged block files (a flipped byte) are dropped and counted (disk_errors_total), the prompt is
  recomputed with the same output, and a foreign file in the folder is left alone;
- a server killed with SIGKILL loses the blocks it held only in memory (documented);
- bad options are refused with a clear message.

Usage: test_llm_prefix_disk.py --inferloop BUILD/inferloop [unittest args]
Exit status: 0 passed, 1 a failure.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import serve_harness as h  # noqa: E402

INFERLOOP = None
MODEL = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")
BLOCK = 16  # the server's KV block size (tokens)
PROMPT = ("Once upon a time there was a little girl named Lily. She loved to play in the park with her dog Max. "
          "One day the sun was hot and the sky was blue, and Lily and Max ran to the big tree by the pond. ")


class TestLlmPrefixDisk(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="inferloop_prefix_disk_")
        cls.repo = os.path.join(cls.tmp, "repo")
        os.makedirs(os.path.join(cls.repo, "stories", "1"))
        shutil.copy(MODEL, os.path.join(cls.repo, "stories", "1", "model.gguf"))
        cls.dir = os.path.join(cls.tmp, "kv")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve(self, *extra):
        return h.Server(INFERLOOP, self.repo, "--llm-prefix-cache-dir", self.dir, *extra)

    def complete(self, server, prompt):
        status, _, body = h.post_json(server.http_port, "/v1/completions",
                                      {"model": "stories", "prompt": prompt, "max_tokens": 24, "temperature": 0})
        self.assertEqual(status, 200, body)
        return body["choices"][0]["text"], body["usage"]

    def metric(self, server, name, **labels):
        return h.metric_sum(h.metrics(server.http_port), name, model="stories", **labels)

    def block_files(self):
        return sorted(glob.glob(os.path.join(self.dir, "*", "*.ilkv")))

    def test_restart_serves_warm_from_disk_then_damage_is_dropped(self):
        with self.serve() as a:
            cold, usage = self.complete(a, PROMPT)
            self.assertEqual(usage["prompt_tokens_details"]["cached_tokens"], 0)
            self.assertGreater(usage["prompt_tokens"], 4 * BLOCK)
            self.assertLess(usage["prompt_tokens"], 100)
            self.assertEqual(a.terminate(), 0, a.log_text())  # graceful: the cached blocks are written
        files = self.block_files()
        whole = (usage["prompt_tokens"] - 1) // BLOCK * BLOCK  # never the last prompt token
        self.assertGreaterEqual(len(files), whole // BLOCK, files)
        folder = os.path.basename(os.path.dirname(files[0]))
        self.assertRegex(folder, "^[0-9a-f]{32}$")

        with self.serve() as b:
            warm, warm_usage = self.complete(b, PROMPT)
            self.assertEqual(warm, cold)
            self.assertEqual(warm_usage["prompt_tokens_details"]["cached_tokens"], whole)
            self.assertEqual(self.metric(b, "inferloop_llm_prefix_cache_hit_tokens_total", tier="disk"), whole)
            self.assertEqual(self.metric(b, "inferloop_llm_prefix_cache_hit_tokens_total", tier="memory"), 0)
            self.assertGreater(self.metric(b, "inferloop_llm_prefix_cache_disk_bytes_read_total"), 0)
            self.assertGreaterEqual(self.metric(b, "inferloop_llm_prefix_cache_disk_bytes"),
                                    sum(os.path.getsize(f) for f in files))
            self.assertEqual(self.metric(b, "inferloop_llm_prefix_cache_disk_errors_total"), 0)
            again, again_usage = self.complete(b, PROMPT)  # now from memory
            self.assertEqual(again, cold)
            self.assertEqual(self.metric(b, "inferloop_llm_prefix_cache_hit_tokens_total", tier="memory"), whole)
            self.assertEqual(b.terminate(), 0)
        print(f"prefix disk: {len(files)} block files of {os.path.getsize(files[0])} bytes; "
              f"{whole} of {usage['prompt_tokens']} prompt tokens warm after a restart", file=sys.stderr)

        # Damage every block file (a flipped last byte) and add a foreign file: the server
        # recomputes, answers the same, deletes the damaged files and leaves the stranger alone.
        for f in self.block_files():
            with open(f, "r+b") as fh:
                fh.seek(-1, os.SEEK_END)
                last = fh.read(1)
                fh.seek(-1, os.SEEK_END)
                fh.write(bytes([last[0] ^ 0xFF]))
        stranger = os.path.join(self.dir, folder, "0123456789abcdef.ilkv")
        with open(stranger, "wb") as fh:
            fh.write(b"not a block file" * 100)
        with self.serve() as c:
            text, c_usage = self.complete(c, PROMPT)
            self.assertEqual(text, cold)
            self.assertEqual(c_usage["prompt_tokens_details"]["cached_tokens"], 0)
            self.assertGreaterEqual(self.metric(c, "inferloop_llm_prefix_cache_disk_errors_total"), 1)
            self.assertEqual(self.metric(c, "inferloop_llm_prefix_cache_hit_tokens_total", tier="disk"), 0)
            c.proc.kill()  # SIGKILL: what it held only in memory is lost
            c.proc.wait()
        self.assertTrue(os.path.exists(stranger))
        with self.serve() as d:
            _, d_usage = self.complete(d, PROMPT)
            # The damaged files were deleted (first block: recomputed) and the killed server never
            # wrote the blocks it recomputed.
            self.assertEqual(d_usage["prompt_tokens_details"]["cached_tokens"], 0)
            self.assertEqual(d.terminate(), 0)

    def test_bad_options_are_refused(self):
        plain = os.path.join(self.tmp, "plain_file")
        with open(plain, "w") as fh:
            fh.write("x")
        cases = [(["--llm-prefix-cache-dir", os.path.join(plain, "sub")], "--llm-prefix-cache-dir"),
                 (["--llm-prefix-cache-dir", self.dir, "--llm-prefix-cache-mb", "0"], "--llm-prefix-cache-mb"),
                 (["--llm-prefix-cache-dir", self.dir, "--llm-prefix-cache-disk-mb", "0"], "--llm-prefix-cache-disk-mb")]
        for args, needle in cases:
            r = subprocess.run([INFERLOOP, "serve", "--model-repository", self.repo, *args], capture_output=True,
                               text=True, timeout=60)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn(needle, r.stderr, args)


def set_inferloop(path):
    global INFERLOOP
    INFERLOOP = path


if __name__ == "__main__":
    h.run_tests(set_inferloop)
