"""Makes bench/models/resnet50_probe: a ResNet-50 that classifies something, for the adaptive loop's
accuracy bound (bench/adaptive_bench.py, docs/ADAPTIVE.md).

    /usr/bin/python3 bench/adaptive/make_probe_resnet50.py [--force]   # Debian's torch + torchvision

No pretrained weights can be downloaded here, and a random-init ResNet-50's logits are near-uniform
(fp32/int8 top-1 agreement on random inputs is ~60%: no accuracy bound can be tested on it). So:
torchvision's ResNet-50 with a random backbone (seeded; BatchNorm statistics calibrated on the data
below, as bench/make_zoo.py does on noise), and its final fc layer trained (a linear probe, softmax
regression on the pooled 2048-d features) on a synthetic 10-class image task: sinusoidal gratings
whose class is one of 5 hues times 2 spatial frequencies, with random orientation, phase, contrast
and Gaussian noise. (Finer tasks, e.g. orientation alone, are beyond a random backbone's features:
16% held-out accuracy in a first try.) Writes:
  model.onnx              opset 17, dynamic batch, image FP32[B,3,224,224] -> logits FP32[B,10]
  calibration/image.npy   64 training images (for the int8 variant)
  evaluation/image.npy    200 held-out images, evaluation/labels.npy their true classes
and prints the fp32 (PyTorch) held-out accuracy.
"""
import argparse
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "resnet50_probe")
HUES = [(1.0, 0.2, 0.2), (0.2, 1.0, 0.2), (0.2, 0.2, 1.0), (1.0, 1.0, 0.2), (0.2, 1.0, 1.0)]
CLASSES = [(h, f) for h in range(len(HUES)) for f in (2, 12)]  # hue index, cycles per image


def gratings(n, rng):
    ys, xs = np.mgrid[0:224, 0:224].astype(np.float32) / 224.0
    images = np.empty((n, 3, 224, 224), np.float32)
    labels = rng.integers(0, len(CLASSES), n)
    for i, c in enumerate(labels):
        hue, freq = CLASSES[c]
        t = rng.uniform(0, np.pi)
        phase = rng.uniform(0, 2 * np.pi)
        wave = np.sin(2 * np.pi * freq * (xs * np.cos(t) + ys * np.sin(t)) + phase)
        colour = np.array(HUES[hue], np.float32) * rng.uniform(0.7, 1.3)
        img = colour[:, None, None] * (1 + wave[None]) - 1 + rng.normal(0, 0.3, (3, 224, 224))
        images[i] = img.astype(np.float32)
    return images, labels.astype(np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    if os.path.exists(os.path.join(OUT, "model.onnx")) and not args.force:
        print(f"{OUT} exists (--force to remake)")
        return
    import torchvision
    torch.manual_seed(0)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    rng = np.random.default_rng(0)
    model = torchvision.models.resnet50(weights=None)
    train_x, train_y = gratings(400, rng)
    test_x, test_y = gratings(200, rng)
    # BatchNorm statistics from the data (train-mode passes, cumulative average).
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for i in range(0, 64, 16):
            model(torch.from_numpy(train_x[i:i + 16]))
    model.eval()
    model.fc = torch.nn.Identity()

    def features(x):
        with torch.no_grad():
            return torch.cat([model(torch.from_numpy(x[i:i + 16])) for i in range(0, len(x), 16)])
    ftr, fte = features(train_x), features(test_x)
    mu, sd = ftr.mean(0), ftr.std(0) + 1e-6
    fc = torch.nn.Linear(2048, len(CLASSES))
    opt = torch.optim.Adam(fc.parameters(), lr=1e-2, weight_decay=1e-2)
    target = torch.from_numpy(train_y)
    for _ in range(400):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(fc((ftr - mu) / sd), target)
        loss.backward()
        opt.step()
    # Fold the feature standardisation into the layer: W' = W / sd, b' = b - W' mu.
    head = torch.nn.Linear(2048, len(CLASSES))
    with torch.no_grad():
        head.weight.copy_(fc.weight / sd)
        head.bias.copy_(fc.bias - head.weight @ mu)
    model.fc = head
    with torch.no_grad():
        acc = (model(torch.from_numpy(test_x[:200])).argmax(1).numpy() == test_y).mean() * 100
    os.makedirs(OUT, exist_ok=True)
    torch.onnx.export(model, torch.from_numpy(test_x[:1]), os.path.join(OUT, "model.onnx"), opset_version=17,
                      input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}}, do_constant_folding=True)
    for sub, x in (("calibration", train_x[:64]), ("evaluation", test_x)):
        os.makedirs(os.path.join(OUT, sub), exist_ok=True)
        np.save(os.path.join(OUT, sub, "image.npy"), x)
    np.save(os.path.join(OUT, "evaluation", "labels.npy"), test_y)
    print(f"{OUT}: held-out top-1 accuracy (PyTorch fp32) {acc:.1f}% on {len(test_y)} images, "
          f"train loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
