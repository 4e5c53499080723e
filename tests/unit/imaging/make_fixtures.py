#!/usr/bin/env python3
"""Writes the fixtures of imaging_unit_tests into tests/data/imaging/ (committed; rerun to remake).

Every expected array comes from something outside inferloop:
- codec_onnx_*: the JPEG and PNG files of ONNX's backend tests (test_image_decoder_decode_*) with
  the pixels ONNX's reference implementation decoded from them (through Pillow);
- codec_*.png: PNGs written here with zlib (gray, gray+alpha, RGBA, palette+tRNS, 16-bit RGB,
  interlaced) from NumPy arrays, the arrays being the expected pixels;
- resize_*: ONNX Runtime's Resize (mode=linear, coordinate_transformation_mode=half_pixel,
  antialias=0) on NCHW float inputs;
- nms_*: ONNX Runtime's NonMaxSuppression (center_point_box=0);
- components_*: scipy.ndimage.label (6- and 26-connectivity) and its per-label measurements.

Usage: .venv/bin/python tests/unit/imaging/make_fixtures.py [--onnx-node-tests DIR]
"""
import argparse
import os
import struct
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "imaging")


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def onnx_codec_cases(node_dir):
    for case, name, ext in [("jpeg_rgb", "jpeg", "jpg"), ("png_rgb", "png", "png")]:
        d = os.path.join(node_dir, "test_image_decoder_decode_" + case, "test_data_set_0")
        data = read_pb(os.path.join(d, "input_0.pb"))
        with open(os.path.join(OUT, "codec_onnx_%s.%s" % (name, ext)), "wb") as f:
            f.write(data.tobytes())
        np.save(os.path.join(OUT, "codec_onnx_%s_rgb.npy" % name), read_pb(os.path.join(d, "output_0.pb")))
    d = os.path.join(node_dir, "test_image_decoder_decode_jpeg_grayscale", "test_data_set_0")
    np.save(os.path.join(OUT, "codec_onnx_jpeg_gray.npy"), read_pb(os.path.join(d, "output_0.pb")))


def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def png_bytes(rows, width, height, color_type, bit_depth=8, extra=b"", interlace=0, raw=None):
    """rows: filtered scanline bytes (filter 0) for non-interlaced images, or `raw` for Adam7."""
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, interlace)
    data = raw if raw is not None else b"".join(b"\x00" + r for r in rows)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra + chunk(b"IDAT", zlib.compress(data)) + chunk(b"IEND", b"")


def adam7(pixels):
    """Adam7 interlaced scanlines (filter 0) of an 8-bit HWC array."""
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    out = b""
    for x0, y0, dx, dy in passes:
        sub = pixels[y0::dy, x0::dx]
        if sub.shape[0] == 0 or sub.shape[1] == 0:
            continue
        out += b"".join(b"\x00" + row.tobytes() for row in sub)
    return out


def own_pngs():
    rng = np.random.default_rng(15)
    h, w = 5, 7
    gray = rng.integers(0, 256, (h, w, 1), dtype=np.uint8)
    rgba = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    ga = rng.integers(0, 256, (h, w, 2), dtype=np.uint8)
    rgb16 = rng.integers(0, 65536, (h, w, 3), dtype=np.uint16)
    cases = {
        "gray": (png_bytes([r.tobytes() for r in gray], w, h, 0), gray),
        "rgba": (png_bytes([r.tobytes() for r in rgba], w, h, 6), rgba),
        # Gray + alpha decodes to RGBA.
        "gray_alpha": (png_bytes([r.tobytes() for r in ga], w, h, 4),
                       np.concatenate([ga[..., :1]] * 3 + [ga[..., 1:]], axis=2)),
        # 16-bit samples keep their high byte.
        "rgb16": (png_bytes([r.astype(">u2").tobytes() for r in rgb16], w, h, 2, bit_depth=16),
                  (rgb16 >> 8).astype(np.uint8)),
        "interlaced_rgba": (png_bytes(None, w, h, 6, interlace=1, raw=adam7(rgba)), rgba),
    }
    palette = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]], dtype=np.uint8)
    alpha = np.array([0, 128, 255], dtype=np.uint8)  # entry 3 has no tRNS entry: opaque
    idx = rng.integers(0, 4, (h, w), dtype=np.uint8)
    extra = chunk(b"PLTE", palette.tobytes()) + chunk(b"tRNS", alpha.tobytes())
    want = np.concatenate([palette[idx], np.append(alpha, 255).astype(np.uint8)[idx][..., None]], axis=2)
    cases["palette_trns"] = (png_bytes([r.tobytes() for r in idx], w, h, 3, extra=extra), want)
    for name, (data, pixels) in cases.items():
        with open(os.path.join(OUT, "codec_%s.png" % name), "wb") as f:
            f.write(data)
        np.save(os.path.join(OUT, "codec_%s.npy" % name), pixels)


def run_one_node(node, inputs, outputs, feeds):
    graph = helper.make_graph([node], "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def ort_resize(image_hwc, out_h, out_w):
    x = image_hwc.astype(np.float32).transpose(2, 0, 1)[None]
    c = x.shape[1]
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
                            coordinate_transformation_mode="half_pixel", antialias=0)
    y = run_one_node(node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
                            helper.make_tensor_value_info("sizes", TensorProto.INT64, [4])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                     {"x": x, "sizes": np.array([1, c, out_h, out_w], dtype=np.int64)})
    return y[0].transpose(1, 2, 0).astype(np.float32)


def resize_cases():
    rng = np.random.default_rng(16)
    # (name, h, w, c, out_h, out_w): up, down (by 2 and by non-integers), mixed, one row/column.
    for name, h, w, c, oh, ow in [("up", 4, 5, 3, 9, 11), ("down2", 6, 8, 1, 3, 4), ("down_odd", 17, 13, 3, 5, 6),
                                  ("mixed", 3, 9, 3, 7, 4), ("line", 1, 6, 1, 3, 10)]:
        image = rng.integers(0, 256, (h, w, c), dtype=np.uint8)
        np.save(os.path.join(OUT, "resize_%s_in.npy" % name), image)
        np.save(os.path.join(OUT, "resize_%s_out.npy" % name), ort_resize(image, oh, ow))


def ort_nms(boxes, scores_cn, max_out, iou, score_threshold):
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou", "st"], ["sel"], center_point_box=0)
    n, c = boxes.shape[0], scores_cn.shape[0]
    sel = run_one_node(node, [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, n, 4]),
                              helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, c, n]),
                              helper.make_tensor_value_info("max", TensorProto.INT64, [1]),
                              helper.make_tensor_value_info("iou", TensorProto.FLOAT, [1]),
                              helper.make_tensor_value_info("st", TensorProto.FLOAT, [1])],
                       [helper.make_tensor_value_info("sel", TensorProto.INT64, None)],
                       {"boxes": boxes[None], "scores": scores_cn[None], "max": np.array([max_out], dtype=np.int64),
                        "iou": np.array([iou], dtype=np.float32), "st": np.array([score_threshold], dtype=np.float32)})
    return sel[:, 1:].astype(np.int64)  # [K, 2]: class, box


def nms_cases():
    rng = np.random.default_rng(17)
    n, c = 60, 3
    # Clustered boxes (x1, y1, x2, y2) so that many overlap.
    centres = rng.uniform(10, 90, (6, 2))[rng.integers(0, 6, n)] + rng.normal(0, 4, (n, 2))
    sizes = rng.uniform(8, 30, (n, 2))
    boxes = np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=1).astype(np.float32)
    scores = rng.uniform(0, 1, (n, c)).astype(np.float32)  # [N, C]
    np.save(os.path.join(OUT, "nms_boxes.npy"), boxes)
    np.save(os.path.join(OUT, "nms_scores.npy"), scores)
    # (name, max_output, iou, score_threshold); per class: all classes of `scores`.
    for name, max_out, iou, st in [("a", 100, 0.5, 0.0), ("b", 4, 0.3, 0.2), ("c", 100, 0.7, 0.5)]:
        np.save(os.path.join(OUT, "nms_per_class_%s.npy" % name), ort_nms(boxes, scores.T.copy(), max_out, iou, st))
        # Class-agnostic: each box's best score as one class.
        best = scores.max(axis=1)[None].copy()
        np.save(os.path.join(OUT, "nms_agnostic_%s.npy" % name), ort_nms(boxes, best, max_out, iou, st)[:, 1])


def components_cases():
    from scipy import ndimage
    rng = np.random.default_rng(18)
    volume = ndimage.uniform_filter(rng.uniform(0, 1, (6, 9, 11)), size=2).astype(np.float32)
    threshold = np.float32(0.55)
    np.save(os.path.join(OUT, "components_volume.npy"), volume)
    mask = volume > threshold
    for name, structure in [("k6", ndimage.generate_binary_structure(3, 1)), ("k26", np.ones((3, 3, 3), bool))]:
        labels, n = ndimage.label(mask, structure=structure)
        np.save(os.path.join(OUT, "components_%s_labels.npy" % name), labels.astype(np.int32))
        ids = np.arange(1, n + 1)
        stats = np.zeros((n, 12), dtype=np.float64)  # count, bbox min zyx, bbox max zyx, centroid zyx, max, mean
        stats[:, 0] = ndimage.sum_labels(np.ones_like(volume), labels, ids)
        for i, sl in enumerate(ndimage.find_objects(labels)):
            stats[i, 1:4] = [s.start for s in sl]
            stats[i, 4:7] = [s.stop - 1 for s in sl]
        stats[:, 7:10] = np.array(ndimage.center_of_mass(np.ones_like(volume), labels, ids))
        stats[:, 10] = ndimage.maximum(volume, labels, ids)
        stats[:, 11] = ndimage.mean(volume.astype(np.float64), labels, ids)
        np.save(os.path.join(OUT, "components_%s_stats.npy" % name), stats)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnx-node-tests", default="/work/shared/onnx-backend-tests/node")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    onnx_codec_cases(args.onnx_node_tests)
    own_pngs()
    resize_cases()
    nms_cases()
    components_cases()


if __name__ == "__main__":
    main()
