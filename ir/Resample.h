//===- Resample.h - Resize geometry shared by shapes, interpreter, lowering -*- C++ -*-===//
//
// ONNX Resize (opsets 11-19, one form after import; ir/Ops.def) decided
// once: which output length, scale and region of interest each axis of X
// gets from the inputs roi / scales / sizes and the attributes axes and
// keep_aspect_ratio_policy, where an output index lands in the input
// (coordinate_transformation_mode), and which input elements (taps) it
// reads with which weights (mode, nearest_mode, cubic_coeff_a,
// exclude_outside, antialias). Shape inference reads the lengths, the
// reference interpreter the taps, and the kernel lowering
// (program/lowering/Resize.cpp) writes the same formulas as scalar
// expressions. The numbers follow onnx.reference's Resize (the source of
// the node tests' expected data): coordinates and weights in double.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_RESAMPLE_H
#define FUSEC_IR_RESAMPLE_H

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/Graph.h"

namespace fusec::ir {

/// One axis of a Resize.
struct ResizeAxis {
  int64_t inLen = -1;   ///< input extent (-1: unknown)
  int64_t outLen = -1;  ///< output extent (-1: unknown)
  /// The scale the coordinate transformation divides by: the given scale,
  /// or outLen / inLen when sizes were given (keep_aspect_ratio_policy
  /// applied).
  double scale = 1.0;
  double roiStart = 0.0, roiEnd = 1.0;  ///< tf_crop_and_resize's region, normalised
  /// Scale 1, the same length and the default roi: the axis is copied.
  bool identity = true;
};

/// The attributes of a Resize node, checked.
struct ResizeParams {
  enum class Mode { kNearest, kLinear, kCubic };
  enum class Coord {
    kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric,
    kTfCropAndResize, kTfHalfPixelForNn /* opsets 11-12: (y + 0.5) / scale */,
  };
  enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
  Mode mode = Mode::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool antialias = false;
  double extrapolation = 0.0;
};

/// Reads and checks \p n's Resize attributes. Errors: InvalidArgument for
/// an unknown mode, coordinate_transformation_mode or nearest_mode, and for
/// antialias with mode nearest (ONNX defines it for linear and cubic).
absl::StatusOr<ResizeParams> resizeParams(const Node &n);

/// The geometry of Resize node \p n on an input of shape \p inShape (-1 for
/// an unknown extent). \p roi, \p scales and \p sizes are the values of
/// inputs 1-3, or null when the input is absent or empty; with the `axes`
/// attribute they list only those axes. Exactly one of scales and sizes
/// must be given. An axis whose output length depends on an unknown input
/// extent gets outLen -1. Errors: InvalidArgument for both or neither of
/// scales and sizes, lengths that do not match the rank or axes, a
/// non-positive scale, a negative size, bad axes, an unknown
/// keep_aspect_ratio_policy.
absl::StatusOr<std::vector<ResizeAxis>> resizeGeometry(const Node &n,
                                                       const std::vector<int64_t> &inShape,
                                                       const std::vector<double> *roi,
                                                       const std::vector<double> *scales,
                                                       const std::vector<int64_t> *sizes);

/// The source coordinate of output index \p y along axis \p a, in input
/// elements (ONNX coordinate_transformation_mode). \p outside is set for
/// tf_crop_and_resize when the coordinate lies outside [0, inLen - 1] (the
/// output is extrapolation_value there).
double resizeSourceCoord(const ResizeParams &p, const ResizeAxis &a, double y, bool *outside);

/// The taps for source coordinate \p x: input indices first..first+n-1
/// (before clamping into [0, inLen - 1], which is edge padding) with their
/// weights. f = (x integral ? x - 1 : floor(x)), r = x - f in (0, 1]; the
/// window starts at f + 1 - n/2 (onnx.reference's neighbour rule).
struct ResizeTaps {
  int64_t first = 0;
  std::vector<double> weights;
};
ResizeTaps resizeTaps(const ResizeParams &p, const ResizeAxis &a, double x);

/// The number of taps per resized axis: 2 for nearest and linear, 4 for
/// cubic; with antialias and a downscale (scale < 1), the widened footprint
/// 2 - 2 * (floor(-support / scale) + 1) (support 1 linear, 2 cubic).
int64_t resizeTapCount(const ResizeParams &p, const ResizeAxis &a);

}  // namespace fusec::ir

#endif  // FUSEC_IR_RESAMPLE_H
