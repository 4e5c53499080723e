#!/usr/bin/env python3
"""Fixtures for src/imaging's DICOM reader tests (tests/unit/imaging/dicom_series_test.cc).

Run with the project's venv (pydicom, pylibjpeg pinned in scripts/requirements-dev.txt):
    .venv/bin/python tests/data/dicom/make_dicom_fixtures.py
Writes, under tests/data/dicom/:
  pydicom/<name>.dcm + pydicom/<name>.npy: a few of pydicom's own test files (shipped in its wheel)
      and what pydicom decodes from them: pixel_array * RescaleSlope + RescaleIntercept as float32
      for monochrome files, the raw pixel_array for RGB (pylibjpeg decodes the JPEG ones);
      JPGExtended.npy is pixel_array[::4, ::4] (the full image is 512 KB).
  series/<name>/*.dcm (+ expected.npy, order.npy): tiny synthetic series written with pydicom:
      shuffled file names, non-unit slope/intercept, odd spacing, a coronal plane, RLE; and broken
      ones (mixed SeriesInstanceUIDs, no pixel data, no PixelSpacing, sizes that differ, duplicate
      positions, a missing slice).
Deterministic (fixed seed and UIDs), so reruns give the same files.
"""
import os
import shutil
import zlib

import numpy as np
import pydicom
from pydicom.data import get_testdata_file
from pydicom.dataset import FileDataset, FileMetaDataset
from pydicom.uid import CTImageStorage, ExplicitVRLittleEndian, RLELossless

HERE = os.path.dirname(os.path.abspath(__file__))

MONOCHROME = ["CT_small.dcm", "MR_small.dcm", "MR_small_implicit.dcm", "MR_small_bigendian.dcm",
              "MR_small_RLE.dcm", "rtdose_rle.dcm"]
COLOUR = ["SC_rgb_jpeg_dcmtk.dcm", "SC_rgb_jpeg_gdcm.dcm"]
SUBSAMPLED = ["JPGExtended.dcm"]
# Compared with MR_small.npy (lossless; pydicom cannot decode JPEG-LS without another plugin).
# JPEG 2000 (DCMTK has no decoder for it): the reader's unsupported-transfer-syntax error.
COPY_ONLY = ["MR_small_jpeg_ls_lossless.dcm", "MR_small_jp2klossless.dcm"]


def export_pydicom_files():
    out = os.path.join(HERE, "pydicom")
    os.makedirs(out, exist_ok=True)
    for name in MONOCHROME + COLOUR + SUBSAMPLED + COPY_ONLY:
        src = get_testdata_file(name)
        shutil.copyfile(src, os.path.join(out, name))
        if name in COPY_ONLY:
            continue
        ds = pydicom.dcmread(src)
        arr = ds.pixel_array
        if name in MONOCHROME:
            slope = float(ds.get("RescaleSlope", 1.0))
            intercept = float(ds.get("RescaleIntercept", 0.0))
            arr = (arr.astype(np.float64) * slope + intercept).astype(np.float32)
        elif name in SUBSAMPLED:
            arr = np.ascontiguousarray(arr[::4, ::4])
        np.save(os.path.join(out, name[:-4] + ".npy"), arr)
    # A bare data set: MR_small in implicit VR little endian, with no preamble and no meta header.
    ds = pydicom.dcmread(get_testdata_file("MR_small_implicit.dcm"))
    ds.preamble = None
    ds.file_meta = FileMetaDataset()
    pydicom.dcmwrite(os.path.join(out, "MR_small_no_meta.dcm"), ds, implicit_vr=True, little_endian=True)


def base_dataset(uid_suffix, series_uid, rows, cols):
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = CTImageStorage
    meta.MediaStorageSOPInstanceUID = "1.2.826.0.1.3680043.8.498.9." + uid_suffix
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset("", {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID = CTImageStorage
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.StudyInstanceUID = "1.2.826.0.1.3680043.8.498.1"
    ds.SeriesInstanceUID = series_uid
    ds.Modality = "CT"
    ds.Rows, ds.Columns = rows, cols
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    return ds


def write_series(name, stored, slope, intercept, spacing_yx, positions, orientation, signed,
                 series_uids=None, shapes_override=None, drop=(), rle=False, order_seed=0):
    """stored: [Z, Y, X] integers, slice k at positions[k]. Files get shuffled names."""
    d = os.path.join(HERE, "series", name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    z = stored.shape[0]
    names = np.random.default_rng(order_seed).permutation(z)  # file name rank of slice k
    for k in range(z):
        img = stored[k] if not shapes_override or k not in shapes_override else shapes_override[k]
        tag = zlib.crc32(name.encode()) % 1000
        uid = series_uids[k] if series_uids else f"1.2.826.0.1.3680043.8.498.2.{tag}"
        ds = base_dataset(f"{tag}.{k}", uid, img.shape[0], img.shape[1])
        ds.ImagePositionPatient = [f"{v:g}" for v in positions[k]]
        ds.ImageOrientationPatient = [f"{v:g}" for v in orientation]
        if "spacing" not in drop:
            ds.PixelSpacing = [f"{v:g}" for v in spacing_yx]
        ds.SliceThickness = "1"
        ds.RescaleSlope, ds.RescaleIntercept = f"{slope:g}", f"{intercept:g}"
        ds.BitsAllocated, ds.BitsStored, ds.HighBit = 16, 16, 15
        ds.PixelRepresentation = 1 if signed else 0
        if "pixels" not in drop:
            ds.PixelData = img.astype(np.int16 if signed else np.uint16).tobytes()
            if rle:
                ds.compress(RLELossless, encoding_plugin="pydicom", generate_instance_uid=False)
        ds.save_as(os.path.join(d, f"slice_{names[k]:03d}.dcm"), enforce_file_format=True)
    return d, names


def save_expected(d, names, expected_order, values):
    """expected.npy: the volume sorted along the normal; order.npy: for each sorted slice, the index
    of its file in name order (what ReadDicomSeries reports as source_file_index)."""
    np.save(os.path.join(d, "expected.npy"), values.astype(np.float32))
    np.save(os.path.join(d, "order.npy"), names[expected_order].astype(np.int32))


def make_series():
    rng = np.random.default_rng(15)
    axial = [1, 0, 0, 0, 1, 0]
    shutil.rmtree(os.path.join(HERE, "series"), ignore_errors=True)

    # Axial, int16 stored, CT-style intercept, z decreasing in file order, 0.7 x 0.9 mm pixels.
    stored = rng.integers(-500, 1500, size=(5, 6, 5)).astype(np.int16)
    pos = [[-10.0, 20.0, 30.0 - 1.25 * k] for k in range(5)]
    d, names = write_series("axial_shuffled", stored, 1.0, -1024.0, (0.7, 0.9), pos, axial, signed=True, order_seed=1)
    expected_order = np.argsort([p[2] for p in pos])  # ascending along the normal (0, 0, 1)
    save_expected(d, names, expected_order, stored[expected_order].astype(np.float64) - 1024)

    # Coronal (normal (0, 1, 0)), uint16 stored with slope 2.5 and intercept -100.5, 2 mm apart.
    stored = rng.integers(0, 4000, size=(4, 3, 7)).astype(np.uint16)
    coronal = [1, 0, 0, 0, 0, -1]
    pos = [[0.0, 5.0 + 2.0 * k, 0.0] for k in (2, 0, 3, 1)]
    d, names = write_series("coronal_rescaled", stored, 2.5, -100.5, (0.5, 0.75), pos, coronal, signed=False,
                            order_seed=2)
    expected_order = np.argsort([p[1] for p in pos])
    save_expected(d, names, expected_order, stored[expected_order] * 2.5 - 100.5)

    # The axial series RLE-compressed by pydicom's own encoder.
    stored = rng.integers(-1024, 2000, size=(3, 8, 6)).astype(np.int16)
    pos = [[0.0, 0.0, 3.0 * k] for k in (1, 2, 0)]
    d, names = write_series("rle", stored, 1.0, 0.0, (1.0, 1.0), pos, axial, signed=True, rle=True, order_seed=3)
    expected_order = np.argsort([p[2] for p in pos])
    save_expected(d, names, expected_order, stored[expected_order])

    small = rng.integers(0, 100, size=(3, 4, 4)).astype(np.int16)
    pos3 = [[0.0, 0.0, float(k)] for k in range(3)]
    write_series("mixed_uids", small, 1, 0, (1, 1), pos3, axial, True,
                 series_uids=["1.2.3.4", "1.2.3.4", "1.2.3.5"])
    write_series("no_pixel_data", small, 1, 0, (1, 1), pos3, axial, True, drop=("pixels",))
    write_series("no_spacing", small, 1, 0, (1, 1), pos3, axial, True, drop=("spacing",))
    write_series("size_mismatch", small, 1, 0, (1, 1), pos3, axial, True,
                 shapes_override={2: np.zeros((5, 4), np.int16)})
    write_series("duplicate_position", small, 1, 0, (1, 1), [[0.0, 0.0, 0.0]] * 3, axial, True)
    write_series("missing_slice", small, 1, 0, (1, 1), [[0.0, 0.0, z] for z in (0.0, 1.0, 3.0)], axial, True)


if __name__ == "__main__":
    export_pydicom_files()
    make_series()
