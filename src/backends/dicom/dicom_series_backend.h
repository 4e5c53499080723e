// The dicom_series backend (`backend: "dicom_series"`): the files of one DICOM series in, one
// volume out (the first step of a CT pipeline). Not batched (max_batch_size 0): one request is one
// series.
//
// Config:
//   input:  one, TYPE_STRING dims [-1]: the series' N files, each element one file's bytes, in any
//           order (imaging/dicom_series.h reads them with DCMTK and sorts the slices along the
//           slice normal; RescaleSlope/Intercept applied, so CT comes out in Hounsfield units).
//   output: `volume` TYPE_FP32 dims [1, -1, -1, -1] (required): [1, Z, Y, X], resampled when
//           target_spacing is given (trilinear; first voxel centres kept: imaging/volume_ops.h);
//           `spacing` TYPE_FP32 dims [3] (optional): z, y, x mm of the output volume;
//           `origin` TYPE_FP32 dims [3] (optional): ImagePositionPatient of the first voxel's
//           centre (patient x, y, z mm; resampling does not move it).
//   max_batch_size must be 0; any other output name is refused when the model loads.
// Parameters (docs/PIPELINES.md): target_spacing "z,y,x" mm (absent: the series' own spacing);
// max_voxels (the most values read or produced by resampling; default 2^28);
// require_pixel_spacing (true | false; default true: a file without PixelSpacing is refused,
// false reads it as 1 mm).
// Bad input (bytes that are not DICOM, no pixel data, mixed SeriesInstanceUIDs, missing
// PixelSpacing, sizes or spacing that differ, a colour series, over max_voxels) fails the request
// with InvalidArgument naming the input, the file index ("DICOM file 3") and the problem.
// Cost: one decode of every file, plus one trilinear pass over the output when resampling.
#pragma once

#include <memory>

#include "serve/model_backend.h"

namespace inferloop::backends {

std::shared_ptr<serve::ModelBackend> MakeDicomSeriesBackend();

}  // namespace inferloop::backends
