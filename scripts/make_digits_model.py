#!/usr/bin/python3
"""Trains a small CNN on the 8x8 digits data set and exports it as ONNX (examples/digits).

Run with Debian's Python and PyTorch (apt-get install python3-torch; not the venv):

    /usr/bin/python3 scripts/make_digits_model.py [--out examples/digits]

The digits data (1797 images, 8x8 pixels 0..16, labels 0..9) is the copy Debian's python3-sklearn
ships. With scikit-learn importable it comes from sklearn.datasets.load_digits; otherwise the
python3-sklearn package is fetched with `apt-get download` into a temporary folder and unpacked
with `dpkg-deb -x` (not installed: its scipy dependency may conflict with other packages), and
its data/digits.csv.gz is read with numpy (64 pixel values then the label per row).

Writes OUT/model.onnx (input "input" float32 [N,1,8,8], pixels scaled to [0,1]; output "logits"
float32 [N,10]; N dynamic; opset 17), OUT/calibration/input.npy (200 training images),
OUT/eval/input.npy and OUT/eval/labels.npy (the held-out 20%, int64 labels), and prints the
held-out FP32 accuracy. Everything is seeded, so a rerun on the same torch build gives the same
files.
"""

import argparse
import gzip
import io
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch import nn

SEED = 20261130
HELD_OUT_FRACTION = 0.2
CALIBRATION_SIZE = 200
DIGITS_CSV = "usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


def load_digits():
    """Returns (images float64 [1797,64] in 0..16, labels int64 [1797]) and where they came from."""
    try:
        from sklearn.datasets import load_digits as sk_load_digits  # noqa: PLC0415

        data = sk_load_digits()
        return data.data.astype(np.float64), data.target.astype(np.int64), "sklearn.datasets"
    except ImportError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        fetched = subprocess.run(["apt-get", "download", "python3-sklearn"], cwd=tmp,
                                 capture_output=True, text=True)
        if fetched.returncode != 0:
            sys.exit("apt-get download python3-sklearn failed:\n" + fetched.stderr)
        debs = [name for name in os.listdir(tmp) if name.endswith(".deb")]
        if len(debs) != 1:
            sys.exit(f"expected one python3-sklearn .deb, got {debs}")
        unpacked = os.path.join(tmp, "x")
        subprocess.run(["dpkg-deb", "-x", os.path.join(tmp, debs[0]), unpacked], check=True)
        with gzip.open(os.path.join(unpacked, DIGITS_CSV), "rb") as f:
            table = np.loadtxt(io.BytesIO(f.read()), delimiter=",")
        return table[:, :64], table[:, 64].astype(np.int64), debs[0]


def split(labels, rng):
    """Stratified split: HELD_OUT_FRACTION of every class held out. Returns (train, held_out) indices."""
    train, held_out = [], []
    for digit in range(10):
        idx = np.flatnonzero(labels == digit)
        rng.shuffle(idx)
        n_held = int(round(len(idx) * HELD_OUT_FRACTION))
        held_out.extend(idx[:n_held])
        train.extend(idx[n_held:])
    train, held_out = np.array(train), np.array(held_out)
    rng.shuffle(train)
    held_out.sort()
    return train, held_out


class DigitsCnn(nn.Module):
    """[N,1,8,8] -> conv3x3(16)+relu -> conv3x3(32)+relu -> maxpool2 -> conv3x3(64)+relu ->
    maxpool2 -> flatten [N,256] -> gemm(64)+relu -> gemm(10)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(64 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "examples", "digits"))
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()

    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    rng = np.random.default_rng(SEED)

    pixels, labels, source = load_digits()
    images = (pixels / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    train, held_out = split(labels, rng)
    print(f"digits: {len(labels)} images from {source}; train {len(train)}, held out {len(held_out)}")

    x_train, y_train = torch.from_numpy(images[train]), torch.from_numpy(labels[train])
    x_eval, y_eval = torch.from_numpy(images[held_out]), torch.from_numpy(labels[held_out])

    model = DigitsCnn()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    loss_fn = nn.CrossEntropyLoss()
    batch = 64
    for epoch in range(args.epochs):
        model.train()
        order = torch.from_numpy(rng.permutation(len(train)))
        for start in range(0, len(train), batch):
            sel = order[start:start + batch]
            optimizer.zero_grad()
            loss = loss_fn(model(x_train[sel]), y_train[sel])
            loss.backward()
            optimizer.step()
        schedule.step()
        if (epoch + 1) % 10 == 0:
            model.eval()
            with torch.no_grad():
                acc = (model(x_eval).argmax(1) == y_eval).float().mean().item()
            print(f"epoch {epoch + 1}: loss {loss.item():.4f}, held-out accuracy {acc * 100:.2f}%")

    model.eval()
    with torch.no_grad():
        predictions = model(x_eval).argmax(1)
    correct = int((predictions == y_eval).sum())
    print(f"FP32 held-out accuracy (PyTorch): {correct}/{len(held_out)} = "
          f"{100.0 * correct / len(held_out):.2f}%")

    os.makedirs(os.path.join(args.out, "calibration"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "eval"), exist_ok=True)
    torch.onnx.export(model, x_eval[:1], os.path.join(args.out, "model.onnx"),
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
                      opset_version=17, do_constant_folding=True)
    np.save(os.path.join(args.out, "calibration", "input.npy"),
            np.ascontiguousarray(images[train[:CALIBRATION_SIZE]]))
    np.save(os.path.join(args.out, "eval", "input.npy"), np.ascontiguousarray(images[held_out]))
    np.save(os.path.join(args.out, "eval", "labels.npy"), labels[held_out].astype(np.int64))
    print(f"wrote {os.path.normpath(args.out)}/model.onnx, calibration/input.npy, "
          "eval/input.npy, eval/labels.npy")


if __name__ == "__main__":
    main()
