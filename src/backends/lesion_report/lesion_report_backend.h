// The lesion_report backend (`backend: "lesion_report"`): a segmentation model's probability map
// in, the lesions it shows out, as numbers, as a JSON report and as a picture (the last step of a
// CT pipeline). Not batched (max_batch_size 0): one request is one volume.
//
// Config (input and output names are fixed; outputs: any of the three, at least one):
//   input  `probability` TYPE_FP32 dims [1, -1, -1, -1]: [1, Z, Y, X] (sliding_window's output);
//   input  `spacing` TYPE_FP32 dims [3]: z, y, x mm (dicom_series' output), finite and > 0;
//   input  `volume` TYPE_FP32 dims [1, -1, -1, -1], optional: true: the HU volume the map was
//          computed from (same size), for mean_hu and the overlay's background;
//   input  `trace` TYPE_STRING dims [1], optional: true: an ensemble's "inferloop.trace" (map it
//          in the step's input_map); its "steps" become the report's "stages";
//   output `findings` TYPE_FP32 dims [-1, 13]: one row per finding, largest volume first:
//          volume_mm3, voxels, centroid z, y, x (mm), bbox min z, y, x, bbox max z, y, x (voxel
//          indices, inclusive), max_prob, mean_hu (NaN without `volume`);
//   output `report` TYPE_STRING dims [1]: a JSON document {"findings": [{"id" (1 = largest),
//          "volume_mm3", "voxels", "centroid_mm": [z, y, x], "bbox": {"min": [z, y, x], "max":
//          [z, y, x]}, "max_prob", "mean_hu" (null without `volume`)}], "threshold",
//          "connectivity", "min_volume_mm3", "spacing_mm": [z, y, x], "shape": [Z, Y, X],
//          "overlay_slice", "stages" (the trace's steps; only when `trace` is given)};
//   output `overlay` TYPE_STRING dims [1]: a PNG (RGB, X wide, Y high) of the axial slice through
//          the largest finding's centroid (round(centroid z / spacing z)), `volume` windowed to
//          gray (without `volume`, the probability: 0 black, 1 white), the finding's voxels in
//          that slice outlined in red (imaging/overlay.h); no finding: the middle slice, no
//          outline.
// Centroids are in mm from the centre of voxel (0, 0, 0) (index x spacing), not patient
// coordinates. Components: imaging/connected_components.h (foreground: probability > threshold).
// Parameters (docs/PIPELINES.md): threshold (default 0.5), min_volume_mm3 (smaller components are
// left out; default 0), connectivity (6 | 26; default 26), window_center / window_width (the
// overlay's HU window; defaults 40 / 400).
// Bad inputs (sizes that differ, spacing not three positive numbers, a trace that is not JSON)
// are InvalidArgument naming the input. Cost: one labelling pass over the volume, one PNG encode.
#pragma once

#include <memory>

#include "serve/model_backend.h"

namespace inferloop::backends {

std::shared_ptr<serve::ModelBackend> MakeLesionReportBackend();

}  // namespace inferloop::backends
