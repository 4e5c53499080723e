#!/usr/bin/python3
"""Makes the models and data of the industrial inspection template (examples/inspection).

Run with Debian's Python, PyTorch and Pillow (not the venv, which has no torch):

    apt-get install python3-torch python3-pil      # Debian 12: PyTorch 1.13, Pillow 9.4
    /usr/bin/python3 scripts/make_inspection_models.py [--out examples/inspection]

Data: synthetic 128x128 RGB photos of a machined part's surface, grey with a faint colour tint.
Each has a texture (brushed metal streaks, fine sand-blasted noise, or a smooth gradient), random
lighting (gain, offset, a linear falloff and a soft highlight) and, in about a quarter of the
images, defects: scratches (thin bright or dark curves, 0.6-1.6 px wide, 20-90 px long) and/or
spots (small bright or dark blobs, 2-5 px radius), some of them faint. Every image is quantised
to uint8 and passed through a JPEG encode/decode (Pillow, quality 90, 4:2:0), so the models train
on what they will be served: decoded JPEGs. Splits: train 3000, validation 1000 (picks the screen
threshold), test 1000 (metrics only, not written) and held-out 100 (75 ok, 25 defect; written).

Models (both take float32 NCHW "image": RGB scaled to [0,1], then (x - 0.5) / 0.25 per channel):
  screen  image [N,3,64,64] -> defect_score [N,1], sigmoid probability of a defect. A 6k-parameter
          CNN (3 conv layers, global max pool); its threshold is chosen for recall >= 0.98 on the
          validation split, so it flags everything suspicious. Its input is the 128x128 image
          resized to 64x64 by bilinear interpolation with half-pixel centres (at exactly 2x that
          is the mean of each 2x2 block, which is what training used).
  fine    image [N,3,128,128] -> probs [N,2], softmax [ok, defect]. A 55k-parameter CNN (4 conv
          layers, global max + mean pool, 2 dense layers); a defect when probs[:,1] >= 0.5.
  Cascade: the screen flags (score >= threshold), the fine model decides the flagged ones.

Writes, under OUT:
  model_repository/screen/1/model.onnx, model_repository/fine/1/model.onnx  (opset 17, N dynamic)
  preprocessing.json   input sizes, scale, mean, std, layout, tensor names of both models
  thresholds.json      the screen threshold, the recall target and validation recall/precision
  data/heldout/{ok,defect}_NNN.jpg and data/heldout/labels.json (file -> label, defect kinds)
and prints validation, test and held-out metrics: screen recall/precision at its threshold, fine accuracy,
recall of the cascade and of the fine model alone. Then it checks the exported ONNX files against
PyTorch on 8 held-out images with ONNX Runtime (imported directly if importable, else through the
project's .venv/bin/python), prints the max abs difference and ONNX Runtime's single-image
latency, and fails if the difference exceeds 1e-4.

Takes about 5-6 minutes on 2 CPU cores (data 25 s, screen training about 2 minutes, fine about 3).
Everything is seeded: a rerun with the same torch, numpy and Pillow builds writes the same files.
"""

import argparse
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from PIL import Image
from torch import nn

SEED = 20261215
SIZE = 128
SCREEN_SIZE = 64
MEAN = 0.5
STD = 0.25
JPEG_QUALITY = 90
DEFECT_RATE = 0.25
TARGET_RECALL = 0.98
SPLITS = {"train": 3000, "validation": 1000, "test": 1000}
HELDOUT_OK, HELDOUT_DEFECT = 75, 25
ORT_TOLERANCE = 1e-4
REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


# ---------------------------------------------------------------------------------------------
# Synthetic part images
# ---------------------------------------------------------------------------------------------

def box_blur_rows(a, length):
    """Mean over a window of `length` pixels along axis 1 (wrapping), via a cumulative sum."""
    padded = np.concatenate([a, a[:, :length]], axis=1)
    c = np.cumsum(padded, axis=1)
    return (c[:, length:length + a.shape[1]] - c[:, :a.shape[1]]) / length


def texture(rng):
    """A grey surface in [0,1], float32 [SIZE,SIZE], and the name of its kind."""
    kind = ["brushed", "noise", "gradient"][rng.integers(3)]
    base = rng.uniform(0.35, 0.65)
    if kind == "brushed":
        streaks = box_blur_rows(rng.normal(size=(SIZE, SIZE)), int(rng.integers(12, 48)))
        streak_amplitude = rng.uniform(0.08, 0.25)
        grain = rng.uniform(0.005, 0.02) * rng.normal(size=(SIZE, SIZE))
        g = base + streak_amplitude * streaks + grain
        if rng.random() < 0.5:
            g = g.T
    elif kind == "noise":
        n = rng.normal(size=(SIZE, SIZE))
        if rng.random() < 0.5:  # slightly coarser grain
            n = (n + np.roll(n, 1, 0) + np.roll(n, 1, 1) + np.roll(n, (1, 1), (0, 1))) / 2
        g = base + rng.uniform(0.015, 0.05) * n
    else:
        y, x = np.mgrid[0:SIZE, 0:SIZE] / (SIZE - 1) - 0.5
        angle = rng.uniform(0, 2 * np.pi)
        g = base + rng.uniform(0.1, 0.3) * (x * np.cos(angle) + y * np.sin(angle))
        g = g + rng.uniform(0.005, 0.025) * rng.normal(size=(SIZE, SIZE))
    return g, kind


def lighting(g, rng):
    """Random gain/offset, a linear falloff and a soft highlight."""
    y, x = np.mgrid[0:SIZE, 0:SIZE] / (SIZE - 1) - 0.5
    angle = rng.uniform(0, 2 * np.pi)
    field = 1 + rng.uniform(0, 0.4) * (x * np.cos(angle) + y * np.sin(angle))
    cy, cx = rng.uniform(-0.5, 0.5, size=2)
    field = field + rng.uniform(0, 0.3) * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / rng.uniform(0.02, 0.2))
    return g * field * rng.uniform(0.75, 1.25) + rng.uniform(-0.08, 0.08)


def scratch(rng):
    """Mask in [0,1] of a thin quadratic Bezier curve (a scratch)."""
    length = rng.uniform(20, 90)
    p0 = rng.uniform(8, SIZE - 8, size=2)
    angle = rng.uniform(0, 2 * np.pi)
    p2 = np.clip(p0 + length * np.array([np.cos(angle), np.sin(angle)]), 0, SIZE - 1)
    p1 = (p0 + p2) / 2 + rng.normal(scale=length * 0.25, size=2)
    t = np.linspace(0, 1, 160)[:, None]
    pts = (1 - t) ** 2 * p0 + 2 * (1 - t) * t * p1 + t ** 2 * p2  # [160,2] (y, x)
    lo = np.clip(np.floor(pts.min(0)) - 4, 0, SIZE).astype(int)
    hi = np.clip(np.ceil(pts.max(0)) + 5, 0, SIZE).astype(int)
    yy, xx = np.mgrid[lo[0]:hi[0], lo[1]:hi[1]]
    d2 = ((yy[..., None] - pts[:, 0]) ** 2 + (xx[..., None] - pts[:, 1]) ** 2).min(-1)
    width = rng.uniform(0.6, 1.6)
    mask = np.zeros((SIZE, SIZE))
    mask[lo[0]:hi[0], lo[1]:hi[1]] = np.exp(-d2 / (2 * (width / 2) ** 2))
    return mask


def spot(rng):
    """Mask in [0,1] of a small elliptic blob (a pit or a stain)."""
    cy, cx = rng.uniform(6, SIZE - 6, size=2)
    ry, rx = rng.uniform(2, 5, size=2)
    a = rng.uniform(0, np.pi)
    y, x = np.mgrid[0:SIZE, 0:SIZE]
    u = (x - cx) * np.cos(a) + (y - cy) * np.sin(a)
    v = -(x - cx) * np.sin(a) + (y - cy) * np.cos(a)
    return np.exp(-((u / rx) ** 2 + (v / ry) ** 2))


def add_defects(g, rng):
    """Adds 1-3 scratches and/or spots; returns the image and the defect kinds."""
    kinds = []
    roll = rng.random()
    n_scratch = int(rng.integers(1, 3)) if roll < 0.75 else 0
    n_spot = int(rng.integers(1, 3)) if roll >= 0.45 else 0
    for kind, n, make, amp in (("scratch", n_scratch, scratch, (0.1, 0.4)),
                               ("spot", n_spot, spot, (0.12, 0.45))):
        for _ in range(n):
            sign = 1 if rng.random() < 0.5 else -1
            g = g + sign * rng.uniform(*amp) * make(rng)
        if n:
            kinds.append(kind)
    return g, kinds


def jpeg_roundtrip(rgb):
    """Encodes uint8 [H,W,3] as JPEG (quality 90, 4:2:0); returns (bytes, decoded uint8 [H,W,3])."""
    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, format="JPEG", quality=JPEG_QUALITY, subsampling="4:2:0")
    data = buf.getvalue()
    return data, np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def make_image(rng, defective):
    """One part photo: (jpeg bytes, decoded uint8 [SIZE,SIZE,3], defect kinds)."""
    g, _ = texture(rng)
    g = lighting(g, rng)
    kinds = []
    if defective:
        g, kinds = add_defects(g, rng)
    tint = 1 + rng.normal(scale=0.02, size=3)
    rgb = np.clip(g[..., None] * tint * 255 + 0.5, 0, 255).astype(np.uint8)
    data, decoded = jpeg_roundtrip(rgb)
    return data, decoded, kinds


def make_split(rng, labels):
    """Images for the given labels (0 ok, 1 defect): (jpegs, uint8 [N,S,S,3], kinds)."""
    out = [make_image(rng, bool(y)) for y in labels]
    return [o[0] for o in out], np.stack([o[1] for o in out]), [o[2] for o in out]


# ---------------------------------------------------------------------------------------------
# Preprocessing and models
# ---------------------------------------------------------------------------------------------

def to_input(images_uint8):
    """uint8 [N,S,S,3] -> normalised float32 NCHW tensors (fine 128x128, screen 64x64)."""
    x = torch.from_numpy(images_uint8).permute(0, 3, 1, 2).float() / 255.0
    small = nn.functional.avg_pool2d(x, 2)  # == bilinear resize 128 -> 64 with half-pixel centres
    return (x - MEAN) / STD, (small - MEAN) / STD


def conv_bn_relu(cin, cout, k, stride=1):
    """Conv + BatchNorm + ReLU; the exported ONNX graph has the BatchNorm folded into the Conv."""
    return [nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU()]


class ScreenCnn(nn.Module):
    """[N,3,64,64] -> conv3x3(8) -> maxpool2 -> conv3x3(16) -> maxpool2 ->
    conv3x3(32) -> global max pool -> gemm(1) -> sigmoid: defect_score [N,1]. Every conv has
    BatchNorm (folded into it at export) and ReLU."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            *conv_bn_relu(3, 8, 3), nn.MaxPool2d(2),
            *conv_bn_relu(8, 16, 3), nn.MaxPool2d(2),
            *conv_bn_relu(16, 32, 3),
            nn.AdaptiveMaxPool2d(1), nn.Flatten())
        self.head = nn.Linear(32, 1)

    def logits(self, x):
        return self.head(self.features(x))

    def forward(self, x):
        return torch.sigmoid(self.logits(x))


class FineCnn(nn.Module):
    """[N,3,128,128] -> conv5x5 stride 2 (24)+relu -> maxpool2 -> conv3x3(32)+relu -> maxpool2 ->
    conv3x3(48)+relu -> maxpool2 -> conv3x3(64)+relu -> concat(global max, global mean) [N,128]
    -> gemm(32)+relu -> gemm(2) -> softmax: probs [N,2] ([ok, defect])."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            *conv_bn_relu(3, 24, 5, stride=2), nn.MaxPool2d(2),
            *conv_bn_relu(24, 32, 3), nn.MaxPool2d(2),
            *conv_bn_relu(32, 48, 3), nn.MaxPool2d(2),
            *conv_bn_relu(48, 64, 3))
        self.max_pool = nn.AdaptiveMaxPool2d(1)
        self.mean_pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Sequential(nn.Linear(128, 32), nn.ReLU(), nn.Linear(32, 2))

    def logits(self, x):
        f = self.features(x)
        return self.head(torch.cat([self.max_pool(f).flatten(1), self.mean_pool(f).flatten(1)], 1))

    def forward(self, x):
        return torch.softmax(self.logits(x), dim=1)


def augment(x, rng):
    """Random flips and 90-degree rotations (the surface has no up)."""
    if rng.random() < 0.5:
        x = x.flip(3)
    if rng.random() < 0.5:
        x = x.flip(2)
    if rng.random() < 0.5:
        x = x.transpose(2, 3)
    return x


def train(model, loss_of, x, y, epochs, lr, rng, name, batch=64):
    """Adam with cosine decay; loss_of(model, xb, yb) -> scalar. Prints the loss every epoch."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    steps = epochs * math.ceil(len(x) / batch)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps)
    start = time.time()
    for epoch in range(epochs):
        model.train()
        order = torch.from_numpy(rng.permutation(len(x)))
        total = 0.0
        for s in range(0, len(x), batch):
            sel = order[s:s + batch]
            optimizer.zero_grad()
            loss = loss_of(model, augment(x[sel], rng), y[sel])
            loss.backward()
            optimizer.step()
            schedule.step()
            total += loss.item() * len(sel)
        print(f"  {name} epoch {epoch + 1}/{epochs}: loss {total / len(x):.4f} "
              f"({time.time() - start:.0f} s)", flush=True)
    model.eval()
    return model


def predict(model, x, batch=256):
    with torch.no_grad():
        return torch.cat([model(x[s:s + batch]) for s in range(0, len(x), batch)]).numpy()


# ---------------------------------------------------------------------------------------------
# Threshold and metrics
# ---------------------------------------------------------------------------------------------

def recall_threshold(scores, labels, target):
    """The highest threshold t (rounded down to 1e-6) with recall(score >= t) >= target."""
    defect_scores = np.sort(scores[labels == 1])
    allowed_misses = len(defect_scores) - math.ceil(target * len(defect_scores))
    return math.floor(float(defect_scores[allowed_misses]) * 1e6) / 1e6


def recall_precision(flagged, labels):
    tp = int(np.sum(flagged & (labels == 1)))
    recall = tp / max(1, int(np.sum(labels == 1)))
    precision = tp / max(1, int(np.sum(flagged)))
    return recall, precision


def report(name, screen_scores, fine_probs, labels, threshold):
    """Prints screen, fine and cascade metrics of one split; returns them as a dict."""
    flagged = screen_scores[:, 0] >= threshold
    fine_defect = fine_probs[:, 1] >= 0.5
    cascade = flagged & fine_defect
    s_rec, s_prec = recall_precision(flagged, labels)
    f_rec, f_prec = recall_precision(fine_defect, labels)
    c_rec, c_prec = recall_precision(cascade, labels)
    fine_acc = float(np.mean(fine_defect == (labels == 1)))
    cascade_acc = float(np.mean(cascade == (labels == 1)))
    n_def = int(np.sum(labels == 1))
    print(f"{name}: {len(labels)} images, {n_def} defective")
    print(f"  screen @ {threshold:.6f}: recall {s_rec:.3f}, precision {s_prec:.3f}, "
          f"flags {np.mean(flagged):.1%} of images (sent to fine)")
    print(f"  fine alone: accuracy {fine_acc:.3f}, recall {f_rec:.3f}, precision {f_prec:.3f}")
    print(f"  cascade (screen flags -> fine decides): accuracy {cascade_acc:.3f}, "
          f"recall {c_rec:.3f}, precision {c_prec:.3f}")
    return {"screen_recall": s_rec, "screen_precision": s_prec, "fine_accuracy": fine_acc,
            "fine_recall": f_rec, "cascade_recall": c_rec, "cascade_accuracy": cascade_acc}


# ---------------------------------------------------------------------------------------------
# Export and checks
# ---------------------------------------------------------------------------------------------

class WithLogits(nn.Module):
    """The fine model exported with its logits as a second output ("logits" [N,2]): the
    pipeline's occlusion saliency explains the logit margin, which does not saturate as the
    softmax probability does for confident parts."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        logits = self.model.logits(x)
        return torch.softmax(logits, dim=1), logits


def export(model, example, path, output_names):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.onnx.export(model, example, path, input_names=["image"], output_names=output_names,
                      dynamic_axes={"image": {0: "N"}, **{n: {0: "N"} for n in output_names}},
                      opset_version=17, do_constant_folding=True)
    print(f"wrote {os.path.relpath(path, REPO_ROOT)} ({os.path.getsize(path)} bytes)")


ORT_CHECK = r"""
import json, sys, time
import numpy as np
import onnxruntime as ort
cases = json.load(open(sys.argv[1]))
worst = 0.0
for case in cases:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    sess = ort.InferenceSession(case["model"], options, providers=["CPUExecutionProvider"])
    x, want = np.load(case["input"]), np.load(case["torch"])
    got = sess.run([case["output"]], {"image": x})[0]
    one = np.concatenate([sess.run([case["output"]], {"image": x[i:i + 1]})[0] for i in range(len(x))])
    assert got.shape == want.shape, (got.shape, want.shape)
    diff = float(max(np.abs(got - want).max(), np.abs(one - want).max()))
    print(f"  onnxruntime {ort.__version__} vs torch, {case['model']}: batch {len(x)} and 1, "
          f"max abs diff {diff:.3g}")
    worst = max(worst, diff)
    times = []
    for i in range(110):
        start = time.perf_counter()
        sess.run([case["output"]], {"image": x[i % len(x):i % len(x) + 1]})
        times.append(time.perf_counter() - start)
    print(f"  onnxruntime, 1 thread, batch 1: median {1e3 * np.median(times[10:]):.3f} ms per image")
print(f"MAXDIFF {worst}")
"""


def check_with_onnxruntime(cases, tmp):
    """Runs the exported models in ONNX Runtime on the cases' inputs; returns the max abs diff
    to PyTorch's outputs, or None when no ONNX Runtime is available."""
    spec = []
    for i, (model_path, output_name, x, want) in enumerate(cases):
        np.save(os.path.join(tmp, f"in{i}.npy"), x)
        np.save(os.path.join(tmp, f"want{i}.npy"), want)
        spec.append({"model": model_path, "output": output_name,
                     "input": os.path.join(tmp, f"in{i}.npy"), "torch": os.path.join(tmp, f"want{i}.npy")})
    with open(os.path.join(tmp, "cases.json"), "w") as f:
        json.dump(spec, f)
    try:
        import onnxruntime  # noqa: F401,PLC0415
        python = sys.executable
    except ImportError:
        python = os.path.join(REPO_ROOT, ".venv", "bin", "python")
        if not os.path.exists(python):
            return None
    r = subprocess.run([python, "-c", ORT_CHECK, os.path.join(tmp, "cases.json")],
                       capture_output=True, text=True)
    print(r.stdout, end="")
    if r.returncode != 0:
        sys.exit("ONNX Runtime check failed:\n" + r.stderr)
    return float(r.stdout.strip().splitlines()[-1].split()[1])


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=2)
        f.write("\n")
    print(f"wrote {os.path.relpath(path, REPO_ROOT)}")


def write_heldout(out, jpegs, labels, kinds):
    """data/heldout/{ok,defect}_NNN.jpg (the encoded bytes the metrics were computed on) and
    labels.json. Returns the file names in order."""
    folder = os.path.join(out, "data", "heldout")
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if name.endswith(".jpg"):
            os.remove(os.path.join(folder, name))
    counts = {0: 0, 1: 0}
    entries, names = [], []
    for data, y, k in zip(jpegs, labels, kinds):
        name = f"{'defect' if y else 'ok'}_{counts[int(y)]:03d}.jpg"
        counts[int(y)] += 1
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        entries.append({"file": name, "label": int(y), "class": "defect" if y else "ok", "defects": k})
        names.append(name)
    total = sum(len(d) for d in jpegs)
    print(f"wrote {len(jpegs)} JPEGs ({total} bytes) to {os.path.relpath(folder, REPO_ROOT)}")
    write_json(os.path.join(folder, "labels.json"),
               {"classes": ["ok", "defect"], "size": [SIZE, SIZE], "images": entries})
    return names


def make_data(rng):
    """All splits: dict name -> (jpegs, uint8 images, labels int64, kinds)."""
    start = time.time()
    data = {}
    for name, n in SPLITS.items():
        labels = (rng.random(n) < DEFECT_RATE).astype(np.int64)
        jpegs, images, kinds = make_split(rng, labels)
        data[name] = (jpegs, images, labels, kinds)
    labels = np.array([0] * HELDOUT_OK + [1] * HELDOUT_DEFECT, dtype=np.int64)
    rng.shuffle(labels)
    jpegs, images, kinds = make_split(rng, labels)
    data["heldout"] = (jpegs, images, labels, kinds)
    print(f"data: {', '.join(f'{k} {len(v[2])} ({v[2].mean():.0%} defective)' for k, v in data.items())} "
          f"in {time.time() - start:.0f} s", flush=True)
    return data


def train_models(data, rng, args):
    fine_x, screen_x = to_input(data["train"][1])
    y = torch.from_numpy(data["train"][2])
    bce = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([2.0]))  # misses cost more: high recall
    screen = train(ScreenCnn(), lambda m, xb, yb: bce(m.logits(xb)[:, 0], yb.float()),
                   screen_x, y, args.screen_epochs, 1e-2, rng, "screen")
    ce = nn.CrossEntropyLoss()
    fine = train(FineCnn(), lambda m, xb, yb: ce(m.logits(xb), yb),
                 fine_x, y, args.fine_epochs, 3e-3, rng, "fine")
    return screen, fine


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(REPO_ROOT, "examples", "inspection"))
    parser.add_argument("--screen-epochs", type=int, default=8)
    parser.add_argument("--fine-epochs", type=int, default=6)
    args = parser.parse_args()

    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    rng = np.random.default_rng(SEED)
    data = make_data(rng)
    screen, fine = train_models(data, rng, args)

    outputs = {}
    for name in ("validation", "test", "heldout"):
        fine_x, screen_x = to_input(data[name][1])
        outputs[name] = (predict(screen, screen_x), predict(fine, fine_x))
    v_scores, v_labels = outputs["validation"][0][:, 0], data["validation"][2]
    threshold = recall_threshold(v_scores, v_labels, TARGET_RECALL)
    metrics = {name: report(name, *outputs[name], data[name][2], threshold)
               for name in ("validation", "test", "heldout")}

    out = args.out
    repo = os.path.join(out, "model_repository")
    screen_path = os.path.join(repo, "screen", "1", "model.onnx")
    fine_path = os.path.join(repo, "fine", "1", "model.onnx")
    fine_h, screen_h = to_input(data["heldout"][1][:8])
    export(screen, screen_h[:1], screen_path, ["defect_score"])
    export(WithLogits(fine).eval(), fine_h[:1], fine_path, ["probs", "logits"])
    write_heldout(out, data["heldout"][0], data["heldout"][2], data["heldout"][3])
    write_json(os.path.join(out, "thresholds.json"), {
        "screen": {"output": "defect_score", "threshold": threshold,
                   "rule": "flag when defect_score >= threshold",
                   "target_recall": TARGET_RECALL,
                   "validation_recall": round(metrics["validation"]["screen_recall"], 4),
                   "validation_precision": round(metrics["validation"]["screen_precision"], 4)},
        "fine": {"output": "probs", "defect_index": 1, "threshold": 0.5,
                 "rule": "defect when probs[:, 1] >= threshold"}})
    write_json(os.path.join(out, "preprocessing.json"), {
        "color": "RGB", "layout": "NCHW", "dtype": "float32", "scale": 1.0 / 255.0,
        "mean": [MEAN] * 3, "std": [STD] * 3,
        "formula": "(pixel * scale - mean[c]) / std[c]",
        "resize": "bilinear, half-pixel centres",
        "models": {"screen": {"input": "image", "height": SCREEN_SIZE, "width": SCREEN_SIZE,
                              "output": "defect_score", "output_shape": [1]},
                   "fine": {"input": "image", "height": SIZE, "width": SIZE,
                            "output": "probs", "output_shape": [2], "classes": ["ok", "defect"]}}})

    with tempfile.TemporaryDirectory(prefix="inspection_ort_") as tmp:
        diff = check_with_onnxruntime(
            [(screen_path, "defect_score", screen_h.numpy(), outputs["heldout"][0][:8]),
             (fine_path, "probs", fine_h.numpy(), outputs["heldout"][1][:8])], tmp)
    if diff is None:
        print("ONNX Runtime not available (no onnxruntime, no .venv): skipped the export check")
    elif diff > ORT_TOLERANCE:
        sys.exit(f"ONNX Runtime and PyTorch differ by {diff:.3g} > {ORT_TOLERANCE}")
    else:
        print(f"ONNX Runtime matches PyTorch: max abs diff {diff:.3g} <= {ORT_TOLERANCE}")


if __name__ == "__main__":
    main()
