//===- Resample.cpp - Resize geometry, coordinates and taps ---------------===//
//
// See Resample.h. Formulas: the ONNX Resize operator page (opset 19) and
// onnx.reference.ops.op_resize, whose per-axis (separable) form the node
// tests' expected outputs come from.
//
//===----------------------------------------------------------------------===//
#include "ir/Resample.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace fusec::ir {

namespace {

absl::Status bad(const Node &n, const std::string &msg) {
  return absl::InvalidArgumentError(absl::StrCat(n.describe(), ": ", msg));
}

/// math.isclose(a, b) with its default relative tolerance (what the
/// reference uses to skip an axis).
bool isClose(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

/// Keys' cubic convolution kernel with parameter \p a at distance \p x.
double cubicKernel(double x, double a) {
  x = std::fabs(x);
  const double x2 = x * x, x3 = x2 * x;
  if (x <= 1) return (a + 2) * x3 - (a + 3) * x2 + 1;
  if (x < 2) return a * x3 - 5 * a * x2 + 8 * a * x - 4 * a;
  return 0.0;
}

}  // namespace

absl::StatusOr<ResizeParams> resizeParams(const Node &n) {
  ResizeParams p;
  const std::string mode = n.attrS("mode");
  if (mode == "nearest") p.mode = ResizeParams::Mode::kNearest;
  else if (mode == "linear") p.mode = ResizeParams::Mode::kLinear;
  else if (mode == "cubic") p.mode = ResizeParams::Mode::kCubic;
  else return bad(n, absl::StrCat("unknown mode '", mode, "' (nearest, linear or cubic)"));
  const std::string coord = n.attrS("coordinate_transformation_mode");
  using C = ResizeParams::Coord;
  if (coord == "half_pixel") p.coord = C::kHalfPixel;
  else if (coord == "half_pixel_symmetric") p.coord = C::kHalfPixelSymmetric;
  else if (coord == "pytorch_half_pixel") p.coord = C::kPytorchHalfPixel;
  else if (coord == "align_corners") p.coord = C::kAlignCorners;
  else if (coord == "asymmetric") p.coord = C::kAsymmetric;
  else if (coord == "tf_crop_and_resize") p.coord = C::kTfCropAndResize;
  else if (coord == "tf_half_pixel_for_nn") p.coord = C::kTfHalfPixelForNn;
  else return bad(n, absl::StrCat("unknown coordinate_transformation_mode '", coord, "'"));
  const std::string nearest = n.attrS("nearest_mode");
  using N = ResizeParams::Nearest;
  if (nearest == "round_prefer_floor") p.nearest = N::kRoundPreferFloor;
  else if (nearest == "round_prefer_ceil") p.nearest = N::kRoundPreferCeil;
  else if (nearest == "floor") p.nearest = N::kFloor;
  else if (nearest == "ceil") p.nearest = N::kCeil;
  else return bad(n, absl::StrCat("unknown nearest_mode '", nearest, "'"));
  p.cubicA = n.attrF("cubic_coeff_a");
  p.excludeOutside = n.attrI("exclude_outside") != 0;
  p.antialias = n.attrI("antialias") != 0;
  p.extrapolation = n.attrF("extrapolation_value");
  if (p.antialias && p.mode == ResizeParams::Mode::kNearest)
    return bad(n, "antialias is defined for modes linear and cubic, not nearest");
  return p;
}

/// Output lengths from scales are refused at or above this (2^62): they would
/// not convert to int64_t, and no tensor that long can exist anyway.
constexpr double kMaxResizeLength = 4611686018427387904.0;

absl::StatusOr<std::vector<ResizeAxis>> resizeGeometry(const Node &n,
                                                       const std::vector<int64_t> &inShape,
                                                       const std::vector<double> *roi,
                                                       const std::vector<double> *scales,
                                                       const std::vector<int64_t> *sizes) {
  const int64_t r = static_cast<int64_t>(inShape.size());
  std::vector<int64_t> axes = n.getInts("axes");
  if (!n.hasAttr("axes"))
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  for (int64_t &a : axes) {
    if (a < -r || a >= r) return bad(n, absl::StrCat("axis ", a, " out of range for rank ", r));
    if (a < 0) a += r;
  }
  for (size_t i = 0; i < axes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (axes[i] == axes[j]) return bad(n, absl::StrCat("axis ", axes[i], " is listed twice"));
  const size_t k = axes.size();
  if (scales && sizes) return bad(n, "both scales and sizes are given (ONNX allows one)");
  if (!scales && !sizes) return bad(n, "neither scales nor sizes is given");
  if (scales && scales->size() != k)
    return bad(n, absl::StrCat("scales has ", scales->size(), " values for ", k, " axes"));
  if (sizes && sizes->size() != k)
    return bad(n, absl::StrCat("sizes has ", sizes->size(), " values for ", k, " axes"));
  ResizeParams::Coord coord = ResizeParams::Coord::kHalfPixel;
  if (auto p = resizeParams(n); p.ok()) coord = p->coord;
  const bool useRoi = coord == ResizeParams::Coord::kTfCropAndResize;
  if (useRoi && !roi) return bad(n, "tf_crop_and_resize needs the roi input");
  if (useRoi && roi->size() != 2 * k)
    return bad(n, absl::StrCat("roi has ", roi->size(), " values, expected ", 2 * k));

  std::vector<ResizeAxis> out(r);
  for (int64_t i = 0; i < r; ++i) {
    out[i].inLen = inShape[i];
    out[i].outLen = inShape[i];
  }
  if (scales) {
    for (size_t j = 0; j < k; ++j) {
      ResizeAxis &a = out[axes[j]];
      const double s = (*scales)[j];
      if (!(s > 0) || !std::isfinite(s))
        return bad(n, absl::StrCat("scale ", s, " for axis ", axes[j], " is not positive"));
      a.scale = s;
      if (a.inLen < 0) {
        a.outLen = -1;
        continue;
      }
      const double len = std::floor(s * static_cast<double>(a.inLen));
      if (!(len < kMaxResizeLength))
        return bad(n, absl::StrCat("scale ", s, " for axis ", axes[j], " gives an output length of ", len,
                                   " (at most 2^62)"));
      a.outLen = static_cast<int64_t>(len);
    }
  } else {
    const std::string policy = n.attrS("keep_aspect_ratio_policy");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      return bad(n, absl::StrCat("unknown keep_aspect_ratio_policy '", policy, "'"));
    for (size_t j = 0; j < k; ++j)
      if ((*sizes)[j] < 0) return bad(n, absl::StrCat("size ", (*sizes)[j], " is negative"));
    if (policy == "stretch") {
      for (size_t j = 0; j < k; ++j) {
        ResizeAxis &a = out[axes[j]];
        a.outLen = (*sizes)[j];
        a.scale = a.inLen > 0 ? static_cast<double>(a.outLen) / static_cast<double>(a.inLen) : 1.0;
      }
    } else {
      // One scale for every listed axis: the smallest (not_larger) or the
      // largest (not_smaller) of sizes / inLen; lengths round half up.
      bool known = true;
      double s = policy == "not_larger" ? INFINITY : 0.0;
      for (size_t j = 0; j < k; ++j) {
        const int64_t in = out[axes[j]].inLen;
        if (in <= 0) {
          known = false;
          continue;
        }
        const double q = static_cast<double>((*sizes)[j]) / static_cast<double>(in);
        s = policy == "not_larger" ? std::min(s, q) : std::max(s, q);
      }
      for (size_t j = 0; j < k; ++j) {
        ResizeAxis &a = out[axes[j]];
        a.scale = known ? s : 1.0;
        const double len = known ? s * static_cast<double>(a.inLen) + 0.5 : -1.0;
        if (known && !(len < kMaxResizeLength))
          return bad(n, absl::StrCat("sizes give axis ", axes[j], " an output length of ", len, " (at most 2^62)"));
        a.outLen = known ? static_cast<int64_t>(len) : -1;
      }
    }
  }
  for (size_t j = 0; j < k; ++j) {
    ResizeAxis &a = out[axes[j]];
    if (useRoi) {
      a.roiStart = (*roi)[j];
      a.roiEnd = (*roi)[k + j];
    }
    a.identity = isClose(a.scale, 1.0) && a.outLen == a.inLen && isClose(a.roiStart, 0.0) &&
                 isClose(a.roiEnd, 1.0);
  }
  return out;
}

double resizeSourceCoord(const ResizeParams &p, const ResizeAxis &a, double y, bool *outside) {
  *outside = false;
  const double in = static_cast<double>(a.inLen);
  // The reference's output_width: scale * inLen, not the integer length.
  const double outW = a.scale * in;
  using C = ResizeParams::Coord;
  switch (p.coord) {
    case C::kAlignCorners:
      return outW == 1 ? 0.0 : y * (in - 1) / (outW - 1);
    case C::kAsymmetric:
      return y / a.scale;
    case C::kTfCropAndResize: {
      double x = outW == 1 ? (a.roiEnd - a.roiStart) * (in - 1) / 2
                           : y * (a.roiEnd - a.roiStart) * (in - 1) / (outW - 1);
      x += a.roiStart * (in - 1);
      *outside = x < 0 || x > in - 1;
      return x;
    }
    case C::kPytorchHalfPixel:
      return outW == 1 ? -0.5 : (y + 0.5) / a.scale - 0.5;
    case C::kHalfPixel:
      return (y + 0.5) / a.scale - 0.5;
    case C::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(a.outLen) / outW;
      const double offset = in / 2 * (1 - adjustment);
      return offset + (y + 0.5) / a.scale - 0.5;
    }
    case C::kTfHalfPixelForNn:
      return (y + 0.5) / a.scale;
  }
  return y;
}

int64_t resizeTapCount(const ResizeParams &p, const ResizeAxis &a) {
  if (p.mode == ResizeParams::Mode::kNearest) return 2;
  const double support = p.mode == ResizeParams::Mode::kCubic ? 2.0 : 1.0;
  if (!p.antialias) return static_cast<int64_t>(2 * support);
  const double s = std::min(a.scale, 1.0);
  const int64_t start = static_cast<int64_t>(std::floor(-support / s)) + 1;
  return 2 - 2 * start;
}

ResizeTaps resizeTaps(const ResizeParams &p, const ResizeAxis &a, double x) {
  const double fl = std::floor(x);
  const double f = x == fl ? x - 1 : fl;
  const double ratio = x - f;  // in (0, 1]
  const int64_t n = resizeTapCount(p, a);
  ResizeTaps t;
  t.first = static_cast<int64_t>(f) + 1 - n / 2;
  t.weights.assign(n, 0.0);
  using M = ResizeParams::Mode;
  using N = ResizeParams::Nearest;
  if (p.mode == M::kNearest) {
    bool upper = true;  // an integral coordinate (ratio 1) is the upper tap
    if (ratio != 1) {
      switch (p.nearest) {
        case N::kRoundPreferFloor: upper = ratio > 0.5; break;
        case N::kRoundPreferCeil: upper = ratio >= 0.5; break;
        case N::kFloor: upper = false; break;
        case N::kCeil: upper = true; break;
      }
    }
    t.weights[upper ? 1 : 0] = 1.0;
  } else if (!p.antialias) {
    if (p.mode == M::kLinear) {
      t.weights = {1 - ratio, ratio};
    } else {
      const double A = p.cubicA;
      t.weights = {cubicKernel(ratio + 1, A), cubicKernel(ratio, A), cubicKernel(1 - ratio, A),
                   cubicKernel(2 - ratio, A)};
    }
  } else {
    // Antialias: the kernel stretched by 1 / scale when downscaling, over
    // the taps (first + i) - x, normalised to sum 1.
    const double s = std::min(a.scale, 1.0);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = (static_cast<double>(t.first + i) - x) * s;
      t.weights[i] = p.mode == M::kLinear ? std::clamp(1 - std::fabs(d), 0.0, 1.0)
                                          : cubicKernel(d, p.cubicA);
      sum += t.weights[i];
    }
    if (sum != 0)
      for (double &w : t.weights) w /= sum;
  }
  if (p.excludeOutside) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (t.first + i < 0 || t.first + i >= a.inLen) t.weights[i] = 0;
      sum += t.weights[i];
    }
    if (sum == 0) sum = 1;
    for (double &w : t.weights) w /= sum;
  }
  return t;
}

}  // namespace fusec::ir
