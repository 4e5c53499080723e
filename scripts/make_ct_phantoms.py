#!/usr/bin/env python3
"""Synthetic CT phantoms for the CT lesion-volume pipeline: DICOM series with known lesions.

Each phantom is a noisy CT-like volume: air (-1000 HU) around an elliptic body cylinder of soft
tissue (about 40 HU), with a few ellipsoidal lesions (60-120 HU) of known size, Gaussian noise
(sd 10-20 HU) over everything. Spacing is random (x/y 0.5-1.0 mm, z 1-3 mm), and so is the
storage: int16 or uint16 with a RescaleSlope/RescaleIntercept that maps back to HU. Written as a
real DICOM series (CT Image Storage, explicit VR little endian, one file per slice, file names
shuffled so the slice order must come from ImagePositionPatient).

Output, per phantom <out>/phantom_<k>/:
  dicom/<random name>.dcm   the series
  labels.npy                uint8 [Z, Y, X], 0 background, i for lesion i; slices in ascending
                            z (patient), i.e. the order ReadDicomSeries gives
  hu.npy                    float32 [Z, Y, X], the HU volume before storage rounding (optional,
                            --write-hu)
  truth.json                spacing, origin (patient z, y, x of voxel 0), slope/intercept, and per
                            lesion: centre (mm from voxel 0's centre, z y x), semi-axes (mm), HU, analytic volume (4/3 pi a b c, mm^3) and voxelised volume
                            (label voxels x voxel volume, mm^3)
and <out>/index.json listing every phantom. Only writes data (training is elsewhere).

Usage: .venv/bin/python scripts/make_ct_phantoms.py --count 4 --size 48,96,96 --seed 0 --out /tmp/ct
"""
import argparse
import json
import math
import os

import numpy as np
import pydicom
from pydicom.dataset import FileDataset, FileMetaDataset
from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, generate_uid

STORAGE = [  # (dtype, slope, intercept): each stores -1024..3071 HU without clipping
    (np.int16, 1.0, 0.0),
    (np.int16, 0.5, -1024.0),
    (np.uint16, 1.0, -1024.0),
    (np.uint16, 2.0, -1100.0),
    (np.uint16, 0.25, -1024.0),
]


def parse_size(text):
    parts = [int(p) for p in text.replace("x", ",").split(",")]
    if len(parts) == 1:
        parts = parts * 3
    if len(parts) != 3 or min(parts) < 8:
        raise argparse.ArgumentTypeError("--size: one number or Z,Y,X, each at least 8")
    return tuple(parts)


def make_volume(rng, size, spacing):
    """HU volume and lesion labels, voxel centres at index * spacing (z, y, x)."""
    z, y, x = (np.arange(n) * s for n, s in zip(size, spacing))
    zz, yy, xx = np.meshgrid(z, y, x, indexing="ij")
    extent = [n * s for n, s in zip(size, spacing)]
    hu = np.full(size, -1000.0)
    body = ((yy - extent[1] / 2) / (0.45 * extent[1])) ** 2 + ((xx - extent[2] / 2) / (0.45 * extent[2])) ** 2 <= 1
    hu[body] = rng.uniform(30, 50)
    labels = np.zeros(size, np.uint8)
    lesions = []
    for i in range(1, int(rng.integers(1, 5)) + 1):
        largest = 0.15 * min(extent[1], extent[2])
        axes = rng.uniform(min(3.0, 0.5 * largest), largest, size=3)
        axes[0] = max(axes[0], 1.5 * spacing[0])  # at least a few slices thick
        centre = [rng.uniform(0.3 * e, 0.7 * e) for e in extent]
        inside = (((zz - centre[0]) / axes[0]) ** 2 + ((yy - centre[1]) / axes[1]) ** 2 +
                  ((xx - centre[2]) / axes[2]) ** 2 <= 1) & (labels == 0)
        if not inside.any():
            continue
        value = float(rng.uniform(60, 120))
        hu[inside] = value
        labels[inside] = i
        voxel = spacing[0] * spacing[1] * spacing[2]
        lesions.append({"label": i, "hu": value, "centre_mm_zyx": [float(c) for c in centre],  # from voxel 0's centre
                        "semi_axes_mm_zyx": [float(a) for a in axes],
                        "analytic_volume_mm3": 4.0 / 3.0 * math.pi * float(np.prod(axes)),
                        "voxel_volume_mm3": float(inside.sum()) * voxel})
    noise_sd = float(rng.uniform(10, 20))
    hu += rng.normal(0, noise_sd, size=size)
    hu = np.clip(hu, -1024, 3071)  # the scanner's range, which every STORAGE entry holds
    return hu.astype(np.float32), labels, lesions, noise_sd


def slice_dataset(study_uid, series_uid, instance_uid, rows, cols):
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = CTImageStorage
    meta.MediaStorageSOPInstanceUID = instance_uid
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset("", {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID, ds.SOPInstanceUID = CTImageStorage, instance_uid
    ds.StudyInstanceUID, ds.SeriesInstanceUID = study_uid, series_uid
    ds.Modality, ds.PatientName, ds.PatientID = "CT", "Phantom^Synthetic", "PHANTOM"
    ds.Rows, ds.Columns, ds.SamplesPerPixel = rows, cols, 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.ImageOrientationPatient = ["1", "0", "0", "0", "1", "0"]
    return ds


def write_series(rng, directory, hu, spacing, origin, storage, uid_seed):
    dtype, slope, intercept = storage
    info = np.iinfo(dtype)
    stored = np.clip(np.round((hu - intercept) / slope), info.min, info.max).astype(dtype)
    study_uid = generate_uid(entropy_srcs=[uid_seed, "study"])
    series_uid = generate_uid(entropy_srcs=[uid_seed, "series"])
    os.makedirs(directory, exist_ok=True)
    names = rng.permutation(hu.shape[0])
    for k in range(hu.shape[0]):
        ds = slice_dataset(study_uid, series_uid, generate_uid(entropy_srcs=[uid_seed, str(k)]), hu.shape[1], hu.shape[2])
        ds.InstanceNumber = k + 1
        ds.ImagePositionPatient = [f"{origin[2]:.4f}", f"{origin[1]:.4f}", f"{origin[0] + k * spacing[0]:.4f}"]
        ds.SliceLocation = f"{origin[0] + k * spacing[0]:.4f}"
        ds.PixelSpacing = [f"{spacing[1]:.6f}", f"{spacing[2]:.6f}"]  # row spacing (y), column spacing (x)
        ds.SliceThickness = f"{spacing[0]:.6f}"
        ds.RescaleSlope, ds.RescaleIntercept, ds.RescaleType = f"{slope:g}", f"{intercept:g}", "HU"
        ds.BitsAllocated, ds.BitsStored, ds.HighBit = 16, 16, 15
        ds.PixelRepresentation = 1 if dtype == np.int16 else 0
        ds.WindowCenter, ds.WindowWidth = "40", "400"
        ds.PixelData = stored[k].tobytes()
        ds.save_as(os.path.join(directory, f"{names[k]:08x}{rng.integers(1 << 30):08x}.dcm"), enforce_file_format=True)


def make_phantom(rng, index, size, out, seed, write_hu):
    spacing = (float(rng.uniform(1.0, 3.0)), *[float(rng.uniform(0.5, 1.0))] * 2)  # z, y, x (square pixels)
    origin = [float(rng.uniform(-200, 200)) for _ in range(3)]
    storage = STORAGE[int(rng.integers(len(STORAGE)))]
    hu, labels, lesions, noise_sd = make_volume(rng, size, spacing)
    directory = os.path.join(out, f"phantom_{index:03d}")
    write_series(rng, os.path.join(directory, "dicom"), hu, spacing, origin, storage, f"{seed}-{index}")
    np.save(os.path.join(directory, "labels.npy"), labels)
    if write_hu:
        np.save(os.path.join(directory, "hu.npy"), hu)
    truth = {"size_zyx": list(size), "spacing_mm_zyx": list(spacing), "origin_mm_zyx": origin,
             "stored_dtype": np.dtype(storage[0]).name, "rescale_slope": storage[1],
             "rescale_intercept": storage[2], "noise_sd_hu": noise_sd, "lesions": lesions}
    with open(os.path.join(directory, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
    return {"name": os.path.basename(directory), "lesions": len(lesions),
            "total_voxel_volume_mm3": sum(l["voxel_volume_mm3"] for l in lesions)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=4, help="phantoms to write")
    parser.add_argument("--size", type=parse_size, default=(48, 96, 96), help="Z,Y,X voxels (or one number)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--write-hu", action="store_true", help="also save the HU volume as hu.npy")
    args = parser.parse_args()
    if args.count < 1:
        parser.error("--count must be at least 1")
    rng = np.random.default_rng(args.seed)
    os.makedirs(args.out, exist_ok=True)
    index = [make_phantom(rng, k, args.size, args.out, args.seed, args.write_hu) for k in range(args.count)]
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump({"seed": args.seed, "size_zyx": list(args.size), "phantoms": index}, f, indent=1)
    print(f"wrote {args.count} phantoms to {args.out}")


if __name__ == "__main__":
    main()
