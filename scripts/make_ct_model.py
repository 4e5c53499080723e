#!/usr/bin/python3
"""Makes the model and held-out data of the CT lesion-volume template (examples/ct).

Run with Debian's Python and PyTorch (not the venv, which has no torch); the phantoms are made
and the checks run by the project's .venv/bin/python (pydicom, onnxruntime, scipy):

    apt-get install python3-torch                   # Debian 12: PyTorch 1.13
    /usr/bin/python3 scripts/make_ct_model.py [--out examples/ct] [--steps 2000]

Data: synthetic CT phantoms from scripts/make_ct_phantoms.py's generator (make_volume: air around
an elliptic soft-tissue body of 30-50 HU, 1-4 ellipsoidal lesions of 60-120 HU, Gaussian noise of
sd 10-20 HU). Training: 40 volumes (+ 8 for validation) of 40x112x112 voxels with the
generator's own spacing law (z 1-3 mm, x = y 0.5-1 mm), used as the float HU volume (storage rounding is below the noise).
Held-out: 3 series of 40x96x96 voxels with spacings and RescaleSlope/Intercept that no training
volume has (HELDOUT below), written as DICOM (shuffled file names) with truth.json; each is
redrawn (next seed) until it has 2+ lesions that do not touch (touching lesions are one component).

Preprocessing (examples/ct/preprocessing.json; the C++ pipeline must do exactly this):
  HU = stored * RescaleSlope + RescaleIntercept; trilinear resampling to 1 x 1 x 1 mm (z y x) with
  voxel 0's centre fixed, n_out = floor((n_in - 1) * spacing / 1 mm) + 1 per axis; then
  x = clip((HU - 40) / 100, -5, 5). Training crops of the resampled volumes are 16x32x32 (the net
  is fully convolutional); labels are the truth ellipsoids rasterised on the 1 mm grid (voxel
  centre inside), which is what the analytic volumes measure.
Inference (bench/ct_pipeline_reference.py): sliding windows of 32x64x64 with overlap 0.25, padded
with -5 (air) where the volume is smaller, mean of overlapping probabilities, threshold (below),
26-connected components, volume = voxels x 1 mm^3, components under 50 mm^3 dropped.

Model (model_repository/lesion_unet/1/model.onnx, opset 17, N dynamic, spatial dims fixed):
  volume float32 [N,1,32,64,64] -> lesion_prob float32 [N,1,32,64,64] (sigmoid). A 3-D U-Net with
  8-16-32 channels: two 3x3x3 Conv+Relu per level, MaxPool 2, ConvTranspose 2 (stride 2) up,
  Concat skips, a 1x1x1 Conv and Sigmoid. No BatchNorm. Ops: Conv, Relu, MaxPool, ConvTranspose,
  Concat, Sigmoid.

Threshold: the one of 0.30, 0.35, ..., 0.70 whose median per-lesion volume ratio on 8 validation
volumes (training law, not trained on) is closest to 1 (it came out 0.5).

Checks: ONNX Runtime vs PyTorch on two windows (batch 2 and 1; fails above 1e-4), then
bench/ct_pipeline_reference.py on each held-out series; prints the lesion table, says whether
every true lesion is within 15% of its analytic volume (the target), and fails if one is missed
or off by more than 20%. The committed model (2000 steps, threshold 0.45 chosen on the validation
volumes): every held-out lesion within 15% (worst -14.3%, a faint 60 HU lesion in 33 HU tissue).

2000 steps of 4 crops: about 6 minutes on 2 CPU cores shared with a compiler (800 steps left two held-out
lesions 16% off). Seeded (torch,
numpy, the phantom seeds); reruns were not compared byte for byte.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from torch import nn

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
import ct_pipeline_reference as ref  # noqa: E402  (its numpy-only stages: one preprocessing)

SEED = 20261501
VENV_PYTHON = os.path.join(REPO_ROOT, ".venv", "bin", "python")
TRAIN_COUNT, TRAIN_SIZE = 48, (40, 112, 112)
CROP = (16, 32, 32)
ROI = (32, 64, 64)
ORT_TOLERANCE = 1e-4
VOLUME_TARGET = 0.15     # the goal: reported when missed
VOLUME_TOLERANCE = 0.20  # the check: fails above it (the committed model's worst is 14.3%)
VALIDATION_COUNT = 8
THRESHOLDS = [round(0.30 + 0.05 * k, 2) for k in range(9)]  # 0.30 .. 0.70
PREPROCESSING = {
    "modality": "CT",
    "target_spacing_mm": [1.0, 1.0, 1.0],
    "axis_order": "zyx",
    "hu": "stored * RescaleSlope + RescaleIntercept",
    "resample": "trilinear (separable linear, z then y then x); output voxel k of an axis at k * target mm "
                "from input voxel 0's centre; n_out = floor((n_in - 1) * spacing / target) + 1",
    "normalisation": {"center_hu": 40.0, "scale_hu": 100.0, "clip_min": -5.0, "clip_max": 5.0,
                      "formula": "clip((HU - center_hu) / scale_hu, clip_min, clip_max)"},
    "roi_size": list(ROI),
    "overlap": 0.25,
    "window_starts": "per axis: 0, stride, 2 stride, ... < n - roi, then n - roi; stride = round(roi * (1 - overlap))",
    "pad_value": -5.0,
    "pad": "an axis shorter than roi is padded at its end with pad_value (air)",
    "blending": "constant: mean of the overlapping windows' lesion_prob",
    "threshold": 0.5,
    "connectivity": 26,
    "min_lesion_volume_mm3": 50.0,
    "model": {"name": "lesion_unet", "input": "volume", "input_shape": [1] + list(ROI),
              "output": "lesion_prob", "output_shape": [1] + list(ROI), "dtype": "float32"},
}
# Held-out series: spacings and storage that no training volume has (training uses the float
# HU volume and spacings drawn from the generator's law, never these exact values).
HELDOUT = [
    {"spacing": [2.2, 0.7, 0.7], "dtype": "int16", "slope": 0.75, "intercept": -500.0},
    {"spacing": [1.6, 0.85, 0.85], "dtype": "uint16", "slope": 1.5, "intercept": -1200.0},
    {"spacing": [2.5, 0.62, 0.62], "dtype": "int16", "slope": 0.2, "intercept": 0.0},
]
HELDOUT_SIZE = (40, 96, 96)

GENERATE = r"""
import json, os, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import make_ct_phantoms as P
spec = json.load(open(sys.argv[2]))
for job in spec["train"]:
    rng = np.random.default_rng(job["seed"])
    spacing = (float(rng.uniform(1.0, 3.0)), *[float(rng.uniform(0.5, 1.0))] * 2)  # make_phantom's law
    hu, _, lesions, _ = P.make_volume(rng, tuple(job["size"]), spacing)
    np.save(job["out"] + ".npy", hu)
    json.dump({"spacing_mm_zyx": spacing, "lesions": lesions}, open(job["out"] + ".json", "w"))
def apart(lesions):  # no two lesions closer than their largest semi-axes + 2 mm
    c = [np.array(l["centre_mm_zyx"]) for l in lesions]
    r = [max(l["semi_axes_mm_zyx"]) for l in lesions]
    return all(np.linalg.norm(c[i] - c[j]) > r[i] + r[j] + 2 for i in range(len(c)) for j in range(i))
for job in spec["heldout"]:
    spacing, storage = tuple(job["spacing"]), (np.dtype(job["dtype"]).type, job["slope"], job["intercept"])
    for attempt in range(200):  # redraw until there are 2+ lesions, none touching
        seed = job["seed"] + 100 * attempt
        rng = np.random.default_rng(seed)
        origin = [float(rng.uniform(-200, 200)) for _ in range(3)]
        hu, _, lesions, noise_sd = P.make_volume(rng, tuple(job["size"]), spacing)
        if len(lesions) >= 2 and apart(lesions):
            break
    job["seed"] = seed
    P.write_series(rng, os.path.join(job["out"], "dicom"), hu, spacing, origin, storage, "heldout-%d" % job["seed"])
    truth = {"seed": seed, "size_zyx": job["size"], "spacing_mm_zyx": list(spacing), "origin_mm_zyx": origin,
             "stored_dtype": job["dtype"], "rescale_slope": job["slope"], "rescale_intercept": job["intercept"],
             "noise_sd_hu": noise_sd, "lesions": lesions}
    with open(os.path.join(job["out"], "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
"""


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------

def generate(tmp, heldout_dir):
    """Runs the phantom generator in the venv: training volumes (npy + json) under tmp, the
    held-out series under heldout_dir. Returns the training jobs."""
    train = [{"seed": SEED + k, "size": list(TRAIN_SIZE), "out": os.path.join(tmp, f"train_{k:03d}")}
             for k in range(TRAIN_COUNT)]
    if os.path.isdir(heldout_dir):
        shutil.rmtree(heldout_dir)
    heldout = [dict(h, seed=SEED + 1000 + k, size=list(HELDOUT_SIZE),
                    out=os.path.join(heldout_dir, f"phantom_{k}")) for k, h in enumerate(HELDOUT)]
    with open(os.path.join(tmp, "spec.json"), "w") as f:
        json.dump({"train": train, "heldout": heldout}, f)
    r = subprocess.run([VENV_PYTHON, "-c", GENERATE, os.path.join(REPO_ROOT, "scripts"),
                        os.path.join(tmp, "spec.json")], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("phantom generation failed:\n" + r.stderr)
    return train


def load_training(jobs):
    """[(resampled normalised volume, rasterised label, lesion centres in 1 mm voxels)] and each
    volume's truth lesions."""
    target = PREPROCESSING["target_spacing_mm"]
    data, lesions = [], []
    for job in jobs:
        hu = np.load(job["out"] + ".npy")
        with open(job["out"] + ".json") as f:
            meta = json.load(f)
        x = ref.normalise(ref.resample_linear(hu, meta["spacing_mm_zyx"], target), PREPROCESSING)
        y = ref.rasterise_lesions(x.shape, meta["lesions"], target)
        centres = [[c / t for c, t in zip(l["centre_mm_zyx"], target)] for l in meta["lesions"]]
        data.append((x, y, centres))
        lesions.append(meta["lesions"])
    return data, lesions


def random_crop(x, y, centres, rng):
    """A CROP-sized (input, label) pair: around a lesion two times in three, else anywhere."""
    x = ref.pad_to_roi(x, CROP, PREPROCESSING["pad_value"])
    y = ref.pad_to_roi(y, CROP, 0)
    starts = []
    focus = centres[rng.integers(len(centres))] if centres and rng.random() < 2 / 3 else None
    for axis, (n, c) in enumerate(zip(x.shape, CROP)):
        if focus is None:
            s = rng.integers(0, n - c + 1)
        else:
            s = int(round(focus[axis] - c / 2 + rng.uniform(-c / 3, c / 3)))
        starts.append(int(min(max(s, 0), n - c)))
    sl = tuple(slice(s, s + c) for s, c in zip(starts, CROP))
    xc, yc = x[sl], y[sl]
    for axis in range(3):
        if rng.random() < 0.5:
            xc, yc = np.flip(xc, axis), np.flip(yc, axis)
    if rng.random() < 0.5:
        xc, yc = xc.transpose(0, 2, 1), yc.transpose(0, 2, 1)
    return np.ascontiguousarray(xc), np.ascontiguousarray(yc)


# ---------------------------------------------------------------------------------------------
# Model and training
# ---------------------------------------------------------------------------------------------

def double_conv(cin, cout):
    return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1), nn.ReLU(),
                         nn.Conv3d(cout, cout, 3, padding=1), nn.ReLU())


class LesionUNet(nn.Module):
    """[N,1,D,H,W] (D, H, W multiples of 4) -> lesion probability [N,1,D,H,W]. Levels of 8, 16
    and 32 channels; MaxPool 2 down, ConvTranspose 2 (stride 2) up, Concat skips."""

    def __init__(self):
        super().__init__()
        self.enc1, self.enc2, self.bottom = double_conv(1, 8), double_conv(8, 16), double_conv(16, 32)
        self.pool = nn.MaxPool3d(2)
        self.up2, self.dec2 = nn.ConvTranspose3d(32, 16, 2, stride=2), double_conv(32, 16)
        self.up1, self.dec1 = nn.ConvTranspose3d(16, 8, 2, stride=2), double_conv(16, 8)
        self.head = nn.Conv3d(8, 1, 1)

    def logits(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        b = self.bottom(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.head(d1)

    def forward(self, x):
        return torch.sigmoid(self.logits(x))


def loss_of(model, xb, yb):
    """BCE plus soft Dice over the batch."""
    logits = model.logits(xb)
    p = torch.sigmoid(logits)
    dice = 1 - (2 * (p * yb).sum() + 1) / (p.sum() + yb.sum() + 1)
    return nn.functional.binary_cross_entropy_with_logits(logits, yb) + dice


def train(data, steps, batch, lr, rng):
    model = LesionUNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps)
    start, running = time.time(), 0.0
    model.train()
    for step in range(steps):
        crops = [random_crop(*data[rng.integers(len(data))], rng) for _ in range(batch)]
        xb = torch.from_numpy(np.stack([c[0] for c in crops])[:, None])
        yb = torch.from_numpy(np.stack([c[1] for c in crops])[:, None].astype(np.float32))
        optimizer.zero_grad()
        loss = loss_of(model, xb, yb)
        loss.backward()
        optimizer.step()
        schedule.step()
        running += loss.item()
        if (step + 1) % 30 == 0:
            print(f"  step {step + 1}/{steps}: loss {running / 30:.4f} ({time.time() - start:.0f} s)", flush=True)
            running = 0.0
    model.eval()
    return model


def torch_runner(model):
    def run(x):
        with torch.no_grad():
            return model(torch.from_numpy(x)).numpy()
    return run


def lesion_regions(shape, lesions):
    """Per lesion, the voxels within twice its semi-axes (1 mm grid), for lesions whose region
    meets no other lesion's (touching lesions cannot be told apart by their components)."""
    regions = [ref.rasterise_lesions(shape, [dict(l, semi_axes_mm_zyx=[2 * a for a in l["semi_axes_mm_zyx"]])],
                                     PREPROCESSING["target_spacing_mm"]) > 0 for l in lesions]
    return [r for i, r in enumerate(regions) if not any((r & o).any() for j, o in enumerate(regions) if j != i)]


def calibrate(model, data, lesions):
    """Sliding-window probabilities on validation volumes (training law, not trained on); prints
    the dice at 0.5 and returns the threshold in THRESHOLDS whose median per-lesion volume ratio
    (found voxels / true voxels within twice the semi-axes) is closest to 1."""
    probs = [ref.blend_windows(x, ROI, PREPROCESSING["overlap"], torch_runner(model), 4)[0] for x, _, _ in data]
    inter = sum(int(np.sum((p >= 0.5) & (y > 0))) for p, (_, y, _) in zip(probs, data))
    total = sum(int(np.sum(p >= 0.5) + y.sum()) for p, (_, y, _) in zip(probs, data))
    print(f"validation: dice {2 * inter / max(total, 1):.4f} at 0.5 on {len(data)} volumes", flush=True)
    best = None
    for t in THRESHOLDS:
        ratios = [float(np.sum((p >= t) & r)) / max(1, int(np.sum((y > 0) & r)))
                  for p, (_, y, _), ls in zip(probs, data, lesions) for r in lesion_regions(p.shape, ls)]
        median = float(np.median(ratios))
        print(f"  threshold {t:.2f}: per-lesion volume ratio median {median:.3f}, "
              f"range {min(ratios):.3f}-{max(ratios):.3f} ({len(ratios)} lesions)")
        if best is None or abs(median - 1) < abs(best[1] - 1):
            best = (t, median)
    print(f"threshold {best[0]:.2f} (median volume ratio {best[1]:.3f})", flush=True)
    return best[0]


# ---------------------------------------------------------------------------------------------
# Export and checks
# ---------------------------------------------------------------------------------------------

CONFIG = """# lesion_unet: volume float32[N,1,32,64,64] -> lesion_prob float32[N,1,32,64,64], one window of
# a CT volume resampled to 1 mm and normalised as examples/ct/preprocessing.json says.
name: "lesion_unet"
backend: "onnxruntime"
max_batch_size: 4
input [
  {
    name: "volume"
    data_type: TYPE_FP32
    dims: [ 1, 32, 64, 64 ]
  }
]
output [
  {
    name: "lesion_prob"
    data_type: TYPE_FP32
    dims: [ 1, 32, 64, 64 ]
  }
]
dynamic_batching {
  max_queue_delay_microseconds: 1000
}
instance_group [ { count: 1, kind: KIND_CPU } ]
"""

ORT_CHECK = r"""
import sys, time
import numpy as np
import onnxruntime as ort
model, x, want = sys.argv[1], np.load(sys.argv[2]), np.load(sys.argv[3])
options = ort.SessionOptions()
options.intra_op_num_threads = 1
sess = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
got = sess.run(["lesion_prob"], {"volume": x})[0]
one = np.concatenate([sess.run(["lesion_prob"], {"volume": x[i:i + 1]})[0] for i in range(len(x))])
assert got.shape == want.shape, (got.shape, want.shape)
diff = float(max(np.abs(got - want).max(), np.abs(one - want).max()))
times = []
for i in range(12):
    start = time.perf_counter()
    sess.run(["lesion_prob"], {"volume": x[:1]})
    times.append(time.perf_counter() - start)
print(f"  onnxruntime {ort.__version__} vs torch: batch {len(x)} and 1, max abs diff {diff:.3g}; "
      f"1 thread, batch 1: median {1e3 * np.median(times[2:]):.1f} ms per window")
print(f"MAXDIFF {diff}")
"""


def export(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.onnx.export(model, torch.zeros(1, 1, *ROI), path, input_names=["volume"],
                      output_names=["lesion_prob"],
                      dynamic_axes={"volume": {0: "N"}, "lesion_prob": {0: "N"}},
                      opset_version=17, do_constant_folding=True)
    with open(os.path.join(os.path.dirname(os.path.dirname(path)), "config.pbtxt"), "w") as f:
        f.write(CONFIG)
    print(f"wrote {os.path.relpath(path, REPO_ROOT)} ({os.path.getsize(path)} bytes) and config.pbtxt")


def check_onnxruntime(model, path, x, tmp):
    """ONNX Runtime vs PyTorch on windows x [B,1,*ROI]; exits on a difference above tolerance."""
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "want.npy"), want)
    r = subprocess.run([VENV_PYTHON, "-c", ORT_CHECK, path, os.path.join(tmp, "x.npy"),
                        os.path.join(tmp, "want.npy")], capture_output=True, text=True)
    print(r.stdout, end="")
    if r.returncode != 0:
        sys.exit("ONNX Runtime check failed:\n" + r.stderr)
    diff = float(r.stdout.strip().splitlines()[-1].split()[1])
    if diff > ORT_TOLERANCE:
        sys.exit(f"ONNX Runtime and PyTorch differ by {diff:.3g} > {ORT_TOLERANCE}")


def check_heldout(heldout_dir, model_path, pre_path):
    """Runs bench/ct_pipeline_reference.py on each held-out series; prints the lesion table and
    returns the worst relative volume error (inf when a lesion is missed)."""
    worst = 0.0
    print(f"{'series':<12}{'lesion':>7}{'analytic mm3':>14}{'voxelised mm3':>15}{'found mm3':>11}{'error':>9}")
    for k in range(len(HELDOUT)):
        folder = os.path.join(heldout_dir, f"phantom_{k}")
        r = subprocess.run([VENV_PYTHON, os.path.join(REPO_ROOT, "bench", "ct_pipeline_reference.py"),
                            os.path.join(folder, "dicom"), "--model", model_path, "--preprocessing", pre_path,
                            "--truth", os.path.join(folder, "truth.json")], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("reference pipeline failed:\n" + r.stderr)
        result = json.loads(r.stdout)
        for row in result["truth"]:
            err = abs(row["relative_error"]) if row["finding_id"] else math.inf
            worst = max(worst, err)
            print(f"phantom_{k:<4}{row['truth_label']:>7}{row['analytic_volume_mm3']:>14.1f}"
                  f"{row['voxel_volume_mm3']:>15.1f}{row['found_volume_mm3']:>11.1f}{row['relative_error']:>+9.1%}")
        extra = [f for f in result["findings"] if f["id"] in result["unmatched_findings"]]
        for f in extra:
            print(f"phantom_{k:<4}{'extra':>7}{'':>14}{'':>15}{f['volume_mm3']:>11.1f}")
    return worst


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(REPO_ROOT, "examples", "ct"))
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--lr", type=float, default=5e-3)
    args = parser.parse_args()

    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    rng = np.random.default_rng(SEED)
    heldout_dir = os.path.join(args.out, "data", "heldout")
    model_path = os.path.join(args.out, "model_repository", "lesion_unet", "1", "model.onnx")
    pre_path = os.path.join(args.out, "preprocessing.json")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ct_model_") as tmp:
        start = time.time()
        jobs = generate(tmp, heldout_dir)
        data, lesions = load_training(jobs)
        n_train = len(data) - VALIDATION_COUNT
        print(f"data: {len(data)} volumes ({n_train} train, {VALIDATION_COUNT} validation), held-out series in "
              f"{os.path.relpath(heldout_dir, REPO_ROOT)}, {time.time() - start:.0f} s", flush=True)
        model = train(data[:n_train], args.steps, args.batch, args.lr, rng)
        PREPROCESSING["threshold"] = calibrate(model, data[n_train:], lesions[n_train:])
        with open(pre_path, "w") as f:
            json.dump(PREPROCESSING, f, indent=2)
            f.write("\n")
        export(model, model_path)
        x = ref.pad_to_roi(data[-1][0], ROI, PREPROCESSING["pad_value"])
        windows = np.stack([x[:ROI[0], :ROI[1], :ROI[2]], x[-ROI[0]:, -ROI[1]:, -ROI[2]:]])[:, None]
        check_onnxruntime(model, model_path, np.ascontiguousarray(windows), tmp)
    worst = check_heldout(heldout_dir, model_path, pre_path)
    if worst > VOLUME_TOLERANCE:
        sys.exit(f"held-out lesion volumes: worst relative error {worst:.1%} > {VOLUME_TOLERANCE:.0%}")
    verdict = "within" if worst <= VOLUME_TARGET else "NOT all within"
    print(f"held-out lesion volumes {verdict} {VOLUME_TARGET:.0%} of the analytic volumes (worst {worst:.1%}; "
          f"the check fails above {VOLUME_TOLERANCE:.0%})")


if __name__ == "__main__":
    main()
