"""The CT lesion-volume pipeline written in Python: the reference the C++ pipeline is compared with.

    .venv/bin/python bench/ct_pipeline_reference.py SERIES_DIR [--model MODEL.onnx]
        [--preprocessing examples/ct/preprocessing.json] [--threads N] [--batch B] [--truth truth.json]
    .venv/bin/python bench/ct_pipeline_reference.py --make-series DIR [--seed S]

Stages (each timed; the parameters come from preprocessing.json, written by scripts/make_ct_model.py):
  read        pydicom reads every file of SERIES_DIR (one CT series, one slice per file)
  sort        slices ordered by ImagePositionPatient projected on the slice normal
              (ImageOrientationPatient row x column); z spacing = median gap between positions
  hu          HU = stored value * RescaleSlope + RescaleIntercept (float32)
  resample    trilinear to target_spacing_mm (1 mm, z y x): output voxel k of an axis lies k * target
              mm from input voxel 0's centre, n_out = floor((n_in - 1) * spacing / target) + 1 (no
              extrapolation); separable linear interpolation, axis z, then y, then x
  normalise   x = clip((HU - 40) / 100, -5, 5)
  infer       sliding window, roi 32x64x64 (z y x), stride round(roi * (1 - overlap)) = 24x48x48;
              window starts per axis 0, stride, 2 stride, ... below n - roi, then n - roi; an axis
              shorter than roi is padded at its end with -5 (air); windows go to ONNX Runtime in
              batches of --batch; lesion_prob of overlapping windows is averaged (constant blending)
  components  lesion = mean probability >= threshold (0.5); 26-connected components
              (scipy.ndimage.label); volume = voxels x 1 mm^3; components below
              min_lesion_volume_mm3 are dropped
Prints one JSON object: series geometry, findings (lesions largest first: volume_mm3, voxels,
centroid in patient mm x y z, bounding box on the 1 mm grid) and timings_ms per stage; with --truth
(a phantom's truth.json from scripts/make_ct_phantoms.py) also each true lesion's matched volume.

--make-series DIR writes a 128-slice 256x256 phantom series (scripts/make_ct_phantoms.py's
generator: spacing 0.7 x 0.7 mm, 1.5 mm slices, int16 storage) for timing the pipeline.

The numpy-only functions (resample_linear, normalise, window_starts, blend_windows,
rasterise_lesions) are imported by scripts/make_ct_model.py, so training sees the same preprocessing.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DEFAULT_MODEL = os.path.join(REPO_ROOT, "examples", "ct", "model_repository", "lesion_unet", "1", "model.onnx")
DEFAULT_PREPROCESSING = os.path.join(REPO_ROOT, "examples", "ct", "preprocessing.json")


# ---------------------------------------------------------------------------------------------
# numpy-only stages (shared with scripts/make_ct_model.py)
# ---------------------------------------------------------------------------------------------

def resample_axis(a, axis, spacing, target):
    """Linear interpolation along one axis onto points k * target mm (k = 0..n_out-1) from voxel 0."""
    n_in = a.shape[axis]
    n_out = int(math.floor((n_in - 1) * spacing / target + 1e-6)) + 1
    if n_in == 1:
        return a.copy()
    pos = np.arange(n_out, dtype=np.float64) * (target / spacing)
    i0 = np.minimum(np.floor(pos).astype(np.int64), n_in - 2)
    f = (pos - i0).astype(np.float32)
    shape = [1] * a.ndim
    shape[axis] = n_out
    f = f.reshape(shape)
    return np.take(a, i0, axis=axis) * (1 - f) + np.take(a, i0 + 1, axis=axis) * f


def resample_linear(volume, spacing_zyx, target_zyx):
    """Trilinear resampling of float32 [Z,Y,X] from spacing_zyx to target_zyx (mm), voxel 0 fixed."""
    out = volume.astype(np.float32, copy=False)
    for axis in range(3):
        out = resample_axis(out, axis, float(spacing_zyx[axis]), float(target_zyx[axis]))
    return np.ascontiguousarray(out, dtype=np.float32)


def normalise(hu, pre):
    n = pre["normalisation"]
    return np.clip((hu - np.float32(n["center_hu"])) / np.float32(n["scale_hu"]),
                   np.float32(n["clip_min"]), np.float32(n["clip_max"])).astype(np.float32)


def window_starts(n, roi, stride):
    """Window starts along an axis of length n (already padded to >= roi)."""
    return list(range(0, n - roi, stride)) + [n - roi]


def pad_to_roi(x, roi, value):
    pads = [(0, max(0, r - n)) for n, r in zip(x.shape, roi)]
    return np.pad(x, pads, constant_values=value) if any(p[1] for p in pads) else x


def window_grid(shape, roi, overlap):
    strides = [max(1, int(round(r * (1 - overlap)))) for r in roi]
    starts = [window_starts(n, r, s) for n, r, s in zip(shape, roi, strides)]
    return [(z, y, x) for z in starts[0] for y in starts[1] for x in starts[2]]


def blend_windows(x, roi, overlap, run_batch, batch):
    """Sliding-window inference over normalised float32 [Z,Y,X] (padded to roi as needed) with
    constant blending; run_batch(float32 [B,1,*roi]) -> [B,1,*roi]. Returns the mean probability
    cropped to x's shape and the number of windows."""
    shape = x.shape
    pad_value = -5.0
    xp = pad_to_roi(x, roi, pad_value)
    total = np.zeros(xp.shape, np.float32)
    count = np.zeros(xp.shape, np.float32)
    grid = window_grid(xp.shape, roi, overlap)
    for s in range(0, len(grid), batch):
        starts = grid[s:s + batch]
        inp = np.stack([xp[z:z + roi[0], y:y + roi[1], w:w + roi[2]] for z, y, w in starts])[:, None]
        out = run_batch(np.ascontiguousarray(inp, dtype=np.float32))
        for (z, y, w), p in zip(starts, out):
            total[z:z + roi[0], y:y + roi[1], w:w + roi[2]] += p[0]
            count[z:z + roi[0], y:y + roi[1], w:w + roi[2]] += 1
    prob = total / count
    return prob[:shape[0], :shape[1], :shape[2]], len(grid)


def rasterise_lesions(shape, lesions, target_zyx):
    """uint8 [Z,Y,X] on the resampled grid: 1 inside any of truth.json's ellipsoids (centres in mm
    from voxel 0's centre, z y x)."""
    axes = [np.arange(n, dtype=np.float64) * t for n, t in zip(shape, target_zyx)]
    mask = np.zeros(shape, np.uint8)
    for lesion in lesions:
        c, a = lesion["centre_mm_zyx"], lesion["semi_axes_mm_zyx"]
        d = [((ax - ci) / ai) ** 2 for ax, ci, ai in zip(axes, c, a)]
        mask |= (d[0][:, None, None] + d[1][None, :, None] + d[2][None, None, :] <= 1).astype(np.uint8)
    return mask


# ---------------------------------------------------------------------------------------------
# DICOM, ONNX Runtime and components (pydicom, onnxruntime, scipy)
# ---------------------------------------------------------------------------------------------

def read_series(directory):
    import pydicom  # noqa: PLC0415
    names = sorted(n for n in os.listdir(directory) if os.path.isfile(os.path.join(directory, n)))
    if not names:
        raise SystemExit(f"error: no files in {directory}")
    return [pydicom.dcmread(os.path.join(directory, n)) for n in names]


def sort_series(slices):
    """Slices in ascending position along the normal; geometry dict (spacing z y x, origin, axes)."""
    iop = np.array([float(v) for v in slices[0].ImageOrientationPatient])
    row, col = iop[:3], iop[3:]
    normal = np.cross(row, col)
    keyed = sorted(slices, key=lambda ds: float(np.dot([float(v) for v in ds.ImagePositionPatient], normal)))
    pos = [float(np.dot([float(v) for v in ds.ImagePositionPatient], normal)) for ds in keyed]
    gaps = np.diff(pos) if len(pos) > 1 else np.array([float(getattr(keyed[0], "SliceThickness", 1.0))])
    dz = float(np.median(gaps))
    if dz <= 0 or np.max(np.abs(gaps - dz)) > 0.01 * dz + 1e-3:
        raise SystemExit(f"error: slices are not evenly spaced (gaps {gaps.min():.4f}..{gaps.max():.4f} mm)")
    dy, dx = (float(v) for v in keyed[0].PixelSpacing)
    geometry = {"slices": len(keyed), "rows": int(keyed[0].Rows), "columns": int(keyed[0].Columns),
                "spacing_mm_zyx": [dz, dy, dx],
                "origin_mm_xyz": [float(v) for v in keyed[0].ImagePositionPatient],
                "row_direction": row.tolist(), "column_direction": col.tolist(), "normal": normal.tolist()}
    return keyed, geometry


def to_hu(slices):
    vol = np.empty((len(slices), int(slices[0].Rows), int(slices[0].Columns)), np.float32)
    for k, ds in enumerate(slices):
        slope = float(getattr(ds, "RescaleSlope", 1.0))
        intercept = float(getattr(ds, "RescaleIntercept", 0.0))
        vol[k] = ds.pixel_array.astype(np.float32) * np.float32(slope) + np.float32(intercept)
    return vol


def ort_runner(model, threads):
    import onnxruntime as ort  # noqa: PLC0415
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    name_in, name_out = sess.get_inputs()[0].name, sess.get_outputs()[0].name
    return lambda x: sess.run([name_out], {name_in: x})[0]


def find_lesions(prob, pre, geometry):
    from scipy import ndimage  # noqa: PLC0415
    target = pre["target_spacing_mm"]
    voxel_mm3 = float(np.prod(target))
    labels, n = ndimage.label(prob >= pre["threshold"], structure=np.ones((3, 3, 3), bool))
    if n == 0:
        return [], labels
    index = np.arange(1, n + 1)
    counts = ndimage.sum_labels(np.ones_like(prob), labels, index)
    centres = ndimage.center_of_mass(np.ones_like(prob), labels, index)
    boxes = ndimage.find_objects(labels)
    origin = np.array(geometry["origin_mm_xyz"])
    dirs = [np.array(geometry["normal"]), np.array(geometry["column_direction"]), np.array(geometry["row_direction"])]
    findings = []
    for i, (count, centre, box) in enumerate(zip(counts, centres, boxes), start=1):
        volume = float(count) * voxel_mm3
        if volume < pre["min_lesion_volume_mm3"]:
            continue
        patient = origin + sum(c * t * d for c, t, d in zip(centre, target, dirs))
        findings.append({"label": i, "volume_mm3": round(volume, 3), "voxels": int(count),
                         "centroid_mm_xyz": [round(float(v), 3) for v in patient],
                         "centroid_voxel_zyx": [round(float(c), 3) for c in centre],
                         "bbox_voxel_zyx": [[s.start, s.stop] for s in box]})
    findings.sort(key=lambda f: -f["volume_mm3"])
    for k, f in enumerate(findings, start=1):
        f["id"] = k
    return findings, labels


def match_truth(findings, labels, truth, pre):
    """Each true lesion: the component under its centre (else the nearest within its largest
    semi-axis), its volume, and the relative error against the analytic volume."""
    target = pre["target_spacing_mm"]
    by_label = {f["label"]: f for f in findings}
    rows = []
    for lesion in truth["lesions"]:
        c = np.array(lesion["centre_mm_zyx"]) / np.array(target)
        idx = tuple(int(round(v)) for v in c)
        hit = None
        if all(0 <= i < n for i, n in zip(idx, labels.shape)) and labels[idx] in by_label:
            hit = by_label[labels[idx]]
        else:
            near = [(np.linalg.norm((np.array(f["centroid_voxel_zyx"]) - c) * target), f) for f in findings]
            near = [p for p in near if p[0] <= max(lesion["semi_axes_mm_zyx"])]
            hit = min(near, key=lambda p: p[0])[1] if near else None
        volume = hit["volume_mm3"] if hit else 0.0
        rows.append({"truth_label": lesion["label"], "finding_id": hit["id"] if hit else None,
                     "analytic_volume_mm3": round(lesion["analytic_volume_mm3"], 3),
                     "voxel_volume_mm3": round(lesion["voxel_volume_mm3"], 3),
                     "found_volume_mm3": volume,
                     "relative_error": round(volume / lesion["analytic_volume_mm3"] - 1, 4)})
    matched = {r["finding_id"] for r in rows}
    return rows, [f["id"] for f in findings if f["id"] not in matched]


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------

def run_pipeline(series_dir, model, pre, threads, batch):
    """(result dict, labels) for one series; result has geometry, findings and timings_ms."""
    times = {}
    clock = time.perf_counter()

    def lap(name):
        nonlocal clock
        now = time.perf_counter()
        times[name] = round(1e3 * (now - clock), 3)
        clock = now

    run = ort_runner(model, threads)
    lap("session")
    slices = read_series(series_dir)
    lap("read")
    slices, geometry = sort_series(slices)
    lap("sort")
    hu = to_hu(slices)
    lap("hu")
    resampled = resample_linear(hu, geometry["spacing_mm_zyx"], pre["target_spacing_mm"])
    lap("resample")
    x = normalise(resampled, pre)
    lap("normalise")
    prob, windows = blend_windows(x, pre["roi_size"], pre["overlap"], run, batch)
    lap("infer")
    findings, labels = find_lesions(prob, pre, geometry)
    lap("components")
    times["total"] = round(sum(times.values()) - times["session"], 3)
    geometry["resampled_shape_zyx"] = list(resampled.shape)
    geometry["windows"] = windows
    return {"series": series_dir, "geometry": geometry, "findings": findings, "timings_ms": times}, labels


def make_series(directory, seed):
    sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))
    import make_ct_phantoms as phantoms  # noqa: PLC0415
    rng = np.random.default_rng(seed)
    size, spacing = (128, 256, 256), (1.5, 0.7, 0.7)
    hu, _, lesions, _ = phantoms.make_volume(rng, size, spacing)
    phantoms.write_series(rng, directory, hu, spacing, [-120.0, -90.0, -90.0], phantoms.STORAGE[0], f"timing-{seed}")
    print(json.dumps({"series": directory, "size_zyx": size, "spacing_mm_zyx": spacing,
                      "lesions": [{"centre_mm_zyx": [round(c, 3) for c in l["centre_mm_zyx"]],
                                   "analytic_volume_mm3": round(l["analytic_volume_mm3"], 1)} for l in lesions]}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("series", nargs="?", help="directory of one CT series (one slice per file)")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--preprocessing", default=DEFAULT_PREPROCESSING)
    parser.add_argument("--threads", type=int, default=1, help="ONNX Runtime intra-op threads")
    parser.add_argument("--batch", type=int, default=1, help="windows per ONNX Runtime run (1-4)")
    parser.add_argument("--truth", help="a phantom's truth.json: also report each true lesion's volume")
    parser.add_argument("--make-series", metavar="DIR", help="write a 128x256x256 timing series and exit")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.make_series:
        return make_series(args.make_series, args.seed)
    if not args.series:
        parser.error("SERIES_DIR is required (or --make-series DIR)")
    with open(args.preprocessing) as f:
        pre = json.load(f)
    result, labels = run_pipeline(args.series, args.model, pre, args.threads, args.batch)
    if args.truth:
        with open(args.truth) as f:
            truth = json.load(f)
        result["truth"], result["unmatched_findings"] = match_truth(result["findings"], labels, truth, pre)
    print(json.dumps(result, indent=1))
    print("timings (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in result["timings_ms"].items()), file=sys.stderr)
    return None


if __name__ == "__main__":
    main()
