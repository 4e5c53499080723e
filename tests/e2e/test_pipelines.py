#!/usr/bin/env python3
"""Solution pipelines through `inferloop serve`, driven by tritonclient (docs/PIPELINES.md).

- TestDigitsPipeline: examples/digits_pipeline, a Triton ensemble (image_preprocess -> the
  digits CNN -> classification) over REST and gRPC gives exactly what the three steps give when
  run by hand, Triton's classification strings, and the digits' held-out accuracy from PNG files.
- TestInspection: examples/inspection, the cascade: on the 100 held-out JPEGs the fine model is
  called exactly as often as the screen flags a part (its statistics and the step metrics), the
  cascade's recall of defective parts is no lower than the fine model's on every part, every part
  gets a verdict JSON with its stages, and parts called defective get a heatmap and a PNG overlay.
- TestBadImages / TestBadDicom: a corrupt JPEG, a truncated PNG, a 100-megapixel image against
  the declared max_pixels, a DICOM series without pixel data, a mixed series, one without
  spacing: each a 400 naming the problem, and the server serves on.
- TestCt: examples/ct, a DICOM series per request (files shuffled) -> 1 mm volume -> the U-Net by
  sliding window -> lesions: on the held-out phantoms (spacings, slopes and intercepts the model
  was not trained on) every lesion's volume is within 15% of the phantom's true volume, the same
  in any file order, with a report JSON (stages) and an overlay PNG.
- TestGgufRepositoryApi: a GGUF model loads and unloads through the KServe repository API in
  explicit mode, as ONNX models do.

Usage: test_pipelines.py --inferloop BUILD/inferloop [unittest args]
"""
import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from PIL import Image
from tritonclient.utils import InferenceServerException

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from serve_harness import Server, get_json, metric_value, metrics, post_json  # noqa: E402

INFERLOOP = None
DIGITS_REPO = os.path.join(ROOT, "examples", "digits_pipeline", "model_repository")
INSPECTION = os.path.join(ROOT, "examples", "inspection")
STORIES = os.path.join(ROOT, "tests", "data", "llm", "stories260k.gguf")
DICOM = os.path.join(ROOT, "tests", "data", "dicom", "series")
CT = os.path.join(ROOT, "examples", "ct")


def png_bytes(array, mode="L"):
    buf = io.BytesIO()
    Image.fromarray(array, mode=mode).save(buf, format="PNG")
    return buf.getvalue()


def bytes_input(mod, name, blobs):
    arr = np.array(blobs, dtype=np.object_).reshape(len(blobs), 1)
    inp = mod.InferInput(name, list(arr.shape), "BYTES")
    inp.set_data_from_numpy(arr)
    return inp


class TestDigitsPipeline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(INFERLOOP, DIGITS_REPO)
        cls.http = httpclient.InferenceServerClient(cls.server.http_url)
        cls.grpc = grpcclient.InferenceServerClient(cls.server.grpc_url)
        x = np.load(os.path.join(ROOT, "examples", "digits", "eval", "input.npy"))
        cls.labels = np.load(os.path.join(ROOT, "examples", "digits", "eval", "labels.npy"))
        cls.pngs = [png_bytes(np.round(img[0] * 255).astype(np.uint8)) for img in x]

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()

    def by_hand(self, pngs):
        r = self.http.infer("digits_preprocess", [bytes_input(httpclient, "IMAGE", pngs)])
        pixels = r.as_numpy("input")
        inp = httpclient.InferInput("input", list(pixels.shape), "FP32")
        inp.set_data_from_numpy(pixels)
        logits = self.http.infer("digits", [inp]).as_numpy("logits")
        inp = httpclient.InferInput("logits", list(logits.shape), "FP32")
        inp.set_data_from_numpy(logits)
        top3 = self.http.infer("digits_classify", [inp]).as_numpy("top3")
        return pixels, logits, top3

    def test_ensemble_over_rest_and_grpc_equals_the_steps_by_hand(self):
        pngs = self.pngs[:8]
        pixels, logits, top3 = self.by_hand(pngs)
        # The preprocess step: gray, 8x8, pixel / 255.
        want = np.stack([np.asarray(Image.open(io.BytesIO(p)), dtype=np.float32)[None] / 255 for p in pngs])
        np.testing.assert_allclose(pixels, want, rtol=0, atol=1e-6)
        for mod, client in ((httpclient, self.http), (grpcclient, self.grpc)):
            r = client.infer("digits_pipeline", [bytes_input(mod, "IMAGE", pngs)])
            np.testing.assert_array_equal(r.as_numpy("LOGITS"), logits)
            np.testing.assert_array_equal(r.as_numpy("TOP3"), top3)
        # Triton's classification strings: "<softmax prob>:<index>:<label>", highest first.
        names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
        for row, lg in zip(top3, logits):
            p = np.exp(lg - lg.max())
            p /= p.sum()
            order = np.argsort(-p, kind="stable")[:3]
            got = [s.decode() for s in row]
            self.assertEqual([g.split(":")[1] for g in got], [str(i) for i in order])
            self.assertEqual([g.split(":")[2] for g in got], [names[i] for i in order])
            np.testing.assert_allclose([float(g.split(":")[0]) for g in got], p[order], atol=1e-6)

    def test_held_out_accuracy_from_png_files(self):
        correct = 0
        for start in range(0, len(self.pngs), 16):
            r = self.http.infer("digits_pipeline", [bytes_input(httpclient, "IMAGE", self.pngs[start:start + 16])])
            top1 = [int(row[0].decode().split(":")[1]) for row in r.as_numpy("TOP3")]
            correct += int((np.array(top1) == self.labels[start:start + 16]).sum())
        # 351/359 from the float inputs (examples/digits/README.md); PNG rounding may move one or two.
        self.assertGreaterEqual(correct, 348)


class TestInspection(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(INFERLOOP, os.path.join(INSPECTION, "model_repository"))
        cls.http = httpclient.InferenceServerClient(cls.server.http_url)
        with open(os.path.join(INSPECTION, "data", "heldout", "labels.json")) as f:
            cls.parts = json.load(f)["images"]
        with open(os.path.join(INSPECTION, "thresholds.json")) as f:
            cls.threshold = json.load(f)["screen"]["threshold"]

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()

    def jpeg(self, entry):
        with open(os.path.join(INSPECTION, "data", "heldout", entry["file"]), "rb") as f:
            return f.read()

    def fine_count(self):
        stats = self.http.get_inference_statistics("fine")["model_stats"]
        return sum(int(s["inference_stats"]["success"]["count"]) for s in stats)

    def test_cascade_calls_the_fine_model_only_for_flagged_parts(self):
        before = self.fine_count()
        flagged, cascade_found, fine_found, defective, explained = 0, 0, 0, 0, 0
        for entry in self.parts:
            blob = self.jpeg(entry)
            r = self.http.infer("inspection", [bytes_input(httpclient, "IMAGE", [blob])])
            score = float(r.as_numpy("DEFECT_SCORE")[0, 0])
            report = json.loads(r.as_numpy("REPORT")[0, 0])
            is_defect = entry["label"] == 1
            defective += is_defect
            if score >= self.threshold:
                flagged += 1
                probs = r.as_numpy("FINE_PROBS")
                self.assertIsNotNone(probs)
                self.assertEqual(report["verdict"], "defect" if probs[0, 1] >= 0.5 else "ok")
                if probs[0, 1] >= 0.5:
                    explained += 1
                    heat = r.as_numpy("HEATMAP")
                    self.assertEqual(heat.shape, (1, 128, 128))
                    self.assertGreater(float(heat.max()), float(heat.min()))
                    png = Image.open(io.BytesIO(r.as_numpy("OVERLAY_PNG")[0, 0]))
                    self.assertEqual(png.size, (128, 128))
            else:
                self.assertIsNone(r.as_numpy("FINE_PROBS"))
                self.assertEqual(report["verdict"], "ok")
                self.assertEqual(report["skipped"], ["fine_probs"])
            cascade_found += is_defect and report["verdict"] == "defect"
            steps = [s["model"] for s in report["stages"]]
            self.assertEqual(steps[:2], ["preprocess", "screen"])
            self.assertTrue(all(s["version"] in ("1", "") for s in report["stages"]))
            # The fine model on every part, for the recall comparison.
            alone = self.http.infer("inspection_fine_only", [bytes_input(httpclient, "IMAGE", [blob])])
            fine_found += is_defect and alone.as_numpy("FINE_PROBS")[0, 1] >= 0.5
        # Fine's requests: one per flagged part through the cascade, one per part alone, and the
        # explanations' 1 + 64 / 8 = 9 per part called defective (explain/config.pbtxt).
        self.assertEqual(self.fine_count() - before, flagged + len(self.parts) + 9 * explained)
        text = metrics(self.server.metrics_port)
        ran = metric_value(text, "inferloop_ensemble_step_total", model="inspection", step="step 3 (fine)", outcome="ran")
        skipped = metric_value(text, "inferloop_ensemble_step_total", model="inspection", step="step 3 (fine)",
                               outcome="skipped")
        self.assertEqual((ran, skipped), (flagged, len(self.parts) - flagged))
        self.assertLess(flagged, len(self.parts) * 0.6)  # the screen passes most good parts
        self.assertGreater(defective, 0)
        self.assertGreaterEqual(cascade_found, fine_found)


class TestBadImages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(INFERLOOP, os.path.join(INSPECTION, "model_repository"))
        cls.http = httpclient.InferenceServerClient(cls.server.http_url)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()

    def refused(self, blob, model="inspection"):
        with self.assertRaises(InferenceServerException) as e:
            self.http.infer(model, [bytes_input(httpclient, "IMAGE", [blob])])
        self.assertEqual(e.exception.status(), "400", str(e.exception))
        return str(e.exception)

    def good(self):
        with open(os.path.join(INSPECTION, "data", "heldout", "ok_000.jpg"), "rb") as f:
            return f.read()

    def test_corrupt_truncated_and_oversized_images(self):
        jpeg = self.good()
        corrupt = jpeg[:200] + bytes(b ^ 0x5A for b in jpeg[200:600]) + jpeg[600:]
        msg = self.refused(corrupt)
        self.assertIn("step 1 (preprocess)", msg)
        self.assertIn("row 0", msg)
        png = png_bytes(np.full((64, 64, 3), 128, np.uint8), mode="RGB")
        msg = self.refused(png[: len(png) // 2])
        self.assertIn("row 0", msg)
        self.refused(b"not an image at all")
        big = png_bytes(np.zeros((10000, 10000), np.uint8))  # 100 megapixels, compresses small
        msg = self.refused(big)
        self.assertIn("100000000", msg)
        self.assertIn("4194304", msg)
        # Served on: a good part is answered.
        r = self.http.infer("inspection", [bytes_input(httpclient, "IMAGE", [self.good()])])
        self.assertIn(json.loads(r.as_numpy("REPORT")[0, 0])["verdict"], ("ok", "defect"))


class TestBadDicom(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.repo = tempfile.mkdtemp(prefix="inferloop_dicom_")
        os.makedirs(os.path.join(cls.repo, "series", "1"))
        with open(os.path.join(cls.repo, "series", "config.pbtxt"), "w") as f:
            f.write('name: "series"\nbackend: "dicom_series"\nmax_batch_size: 0\n'
                    'input [ { name: "FILES" data_type: TYPE_STRING dims: [ -1 ] } ]\n'
                    'output [ { name: "volume" data_type: TYPE_FP32 dims: [ 1, -1, -1, -1 ] },'
                    ' { name: "spacing" data_type: TYPE_FP32 dims: [ 3 ] } ]\n')
        cls.server = Server(INFERLOOP, cls.repo)
        cls.http = httpclient.InferenceServerClient(cls.server.http_url)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        shutil.rmtree(cls.repo, ignore_errors=True)

    def send(self, name):
        d = os.path.join(DICOM, name)
        blobs = []
        for f in sorted(os.listdir(d)):
            if f.endswith(".dcm"):
                with open(os.path.join(d, f), "rb") as fh:
                    blobs.append(fh.read())
        arr = np.array(blobs, dtype=np.object_)
        inp = httpclient.InferInput("FILES", [len(blobs)], "BYTES")
        inp.set_data_from_numpy(arr)
        return self.http.infer("series", [inp])

    def refused(self, name):
        with self.assertRaises(InferenceServerException) as e:
            self.send(name)
        self.assertEqual(e.exception.status(), "400", str(e.exception))
        return str(e.exception).lower()

    def test_bad_series_are_400s_and_a_good_one_decodes(self):
        self.assertIn("pixel data", self.refused("no_pixel_data"))
        self.assertIn("seriesinstanceuid", self.refused("mixed_uids"))
        self.assertIn("pixelspacing", self.refused("no_spacing"))
        r = self.send("axial_shuffled")
        want = np.load(os.path.join(DICOM, "axial_shuffled", "expected.npy"))
        np.testing.assert_allclose(r.as_numpy("volume").reshape(want.shape), want, rtol=0, atol=1e-3)


class TestCt(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(INFERLOOP, os.path.join(CT, "model_repository"), "--threads", "2")
        cls.http = httpclient.InferenceServerClient(cls.server.http_url, network_timeout=600.0)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()

    def analyse(self, files):
        blobs = []
        for path in files:
            with open(path, "rb") as f:
                blobs.append(f.read())
        inp = httpclient.InferInput("DICOM_FILES", [len(blobs)], "BYTES")
        inp.set_data_from_numpy(np.array(blobs, dtype=np.object_))
        return self.http.infer("ct_analysis", [inp])

    def test_lesion_volumes_within_15_percent_in_any_file_order(self):
        heldout = os.path.join(CT, "data", "heldout")
        phantoms = sorted(d for d in os.listdir(heldout) if d.startswith("phantom_"))
        self.assertGreaterEqual(len(phantoms), 3)
        rng = np.random.default_rng(7)
        for name in phantoms:
            with open(os.path.join(heldout, name, "truth.json")) as f:
                truth = json.load(f)
            d = os.path.join(heldout, name, "dicom")
            files = [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".dcm")]
            report = json.loads(self.analyse(files).as_numpy("REPORT")[0])
            shuffled = list(files)
            rng.shuffle(shuffled)
            r2 = self.analyse(shuffled)
            self.assertEqual(json.loads(r2.as_numpy("REPORT")[0])["findings"], report["findings"])
            found = report["findings"]
            self.assertEqual(len(found), len(truth["lesions"]), (name, found))
            # Match each true lesion to the finding whose centroid is nearest its centre.
            for lesion in truth["lesions"]:
                c = np.array(lesion["centre_mm_zyx"])
                f = min(found, key=lambda x: np.linalg.norm(np.array(x["centroid_mm"]) - c))
                want = lesion["analytic_volume_mm3"]
                self.assertLess(abs(f["volume_mm3"] - want) / want, 0.15, (name, lesion, f))
            self.assertEqual([s["model"] for s in report["stages"]], ["ct_read", "ct_segment"])
            png = Image.open(io.BytesIO(r2.as_numpy("OVERLAY_PNG")[0]))
            self.assertGreater(png.size[0], 0)


class TestGgufRepositoryApi(unittest.TestCase):
    def test_load_and_unload_a_gguf_model(self):
        repo = tempfile.mkdtemp(prefix="inferloop_gguf_repo_")
        try:
            os.makedirs(os.path.join(repo, "stories", "1"))
            shutil.copy(STORIES, os.path.join(repo, "stories", "1", "model.gguf"))
            with Server(INFERLOOP, repo, "--model-control-mode", "explicit") as srv:
                port = srv.http_port
                self.assertEqual(get_json(port, "/v1/models")[1]["data"], [])
                status, _, body = post_json(port, "/v2/repository/models/stories/load", {})
                self.assertEqual(status, 200, body)
                self.assertEqual([m["id"] for m in get_json(port, "/v1/models")[1]["data"]], ["stories"])
                status, _, body = post_json(port, "/v1/completions",
                                            {"model": "stories", "prompt": "Once", "max_tokens": 4, "temperature": 0})
                self.assertEqual(status, 200, body)
                status, _, body = post_json(port, "/v2/repository/index", {})
                self.assertEqual([(e["name"], e["state"]) for e in body], [("stories", "READY")])
                status, _, body = post_json(port, "/v2/repository/models/stories/unload", {})
                self.assertEqual(status, 200, body)
                self.assertEqual(get_json(port, "/v1/models")[1]["data"], [])
                status, _, body = post_json(port, "/v1/completions", {"model": "stories", "prompt": "Once", "max_tokens": 4})
                self.assertEqual(status, 503, body)
                srv.terminate()
        finally:
            shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--inferloop", required=True)
    args, rest = ap.parse_known_args()
    INFERLOOP = os.path.abspath(args.inferloop)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
