//===- Resize.cpp - Reference function: Resize ----------------------------===//
//
// ONNX Resize (opsets 11-19 in their one imported form; ir/Ops.def), every
// mode the operator page defines: nearest (four nearest_modes), n-linear
// and cubic (cubic_coeff_a, exclude_outside), antialias for linear and
// cubic, each coordinate_transformation_mode, roi for tf_crop_and_resize,
// axes and keep_aspect_ratio_policy. One axis at a time, as
// onnx.reference does (the separable form of the n-d interpolation), in
// double; the geometry, coordinates and taps come from ir/Resample.h, which
// the kernel lowering shares. Integer results round half to even and
// saturate (onnx.reference's saturate_cast).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "interp/internal/KernelUtil.h"
#include "interp/internal/Kernels.h"
#include "ir/Resample.h"
#include "support/Status.h"

namespace fusec::interp {
namespace {

using ir::Tensor;
using Result = absl::StatusOr<std::vector<Tensor>>;

/// The values of optional input \p i as doubles; nullopt when absent or
/// empty (an empty tensor stands for an absent input in opset 11).
std::optional<std::vector<double>> optionalDoubles(const KernelArgs &args, size_t i) {
  if (i >= args.inputs.size() || !args.inputs[i] || args.inputs[i]->numElements() == 0)
    return std::nullopt;
  return args.inputs[i]->toDoubles();
}

Result resize(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_RETURN_IF_ERROR(requireNumber(*x, "input"));
  FUSEC_ASSIGN_OR_RETURN(ir::ResizeParams p, ir::resizeParams(args.node));
  auto roi = optionalDoubles(args, 1);
  auto scales = optionalDoubles(args, 2);
  std::optional<std::vector<int64_t>> sizes;
  if (args.inputs.size() > 3 && args.inputs[3] && args.inputs[3]->numElements() > 0) {
    FUSEC_ASSIGN_OR_RETURN(sizes, readInts(*args.inputs[3], "sizes"));
  }
  FUSEC_ASSIGN_OR_RETURN(std::vector<ir::ResizeAxis> axes,
                         ir::resizeGeometry(args.node, x->shape(), roi ? &*roi : nullptr,
                                            scales ? &*scales : nullptr, sizes ? &*sizes : nullptr));
  ir::Shape shape = x->shape();
  ir::Shape outShape;
  for (const ir::ResizeAxis &a : axes) outShape.push_back(a.outLen);
  FUSEC_RETURN_IF_ERROR(ir::checkTensorSize(x->dtype(), outShape, "Resize result"));
  std::vector<double> cur = x->toDoubles();
  for (size_t ax = 0; ax < axes.size(); ++ax) {
    const ir::ResizeAxis &a = axes[ax];
    if (a.identity) continue;
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < ax; ++d) outer *= shape[d];
    for (size_t d = ax + 1; d < shape.size(); ++d) inner *= shape[d];
    const int64_t in = shape[ax], out = a.outLen;
    if (in == 0 && out > 0 && outer * inner > 0)
      return invalidArg("cannot resize the empty axis ", ax, " to ", out, " elements");
    std::vector<double> next(static_cast<size_t>(outer * out * inner));
    for (int64_t y = 0; y < out; ++y) {
      bool outside = false;
      const double src = ir::resizeSourceCoord(p, a, static_cast<double>(y), &outside);
      const ir::ResizeTaps taps = ir::resizeTaps(p, a, src);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          double v = p.extrapolation;
          if (!outside) {
            v = 0;
            for (size_t t = 0; t < taps.weights.size(); ++t) {
              if (taps.weights[t] == 0) continue;
              const int64_t j = std::clamp<int64_t>(taps.first + static_cast<int64_t>(t), 0, in - 1);
              v += taps.weights[t] * cur[static_cast<size_t>((o * in + j) * inner + i)];
            }
          }
          next[static_cast<size_t>((o * out + y) * inner + i)] = v;
        }
      }
    }
    cur = std::move(next);
    shape[ax] = out;
  }
  Tensor result(x->dtype(), shape);
  const bool isF = ir::isFloat(x->dtype());
  const auto [lo, hi] = intRange(x->dtype());
  for (int64_t i = 0; i < result.numElements(); ++i) {
    const double v = cur[static_cast<size_t>(i)];
    if (isF) {
      result.setDouble(i, v);
    } else {
      const double r = std::nearbyint(v);
      result.setInt(i, r <= static_cast<double>(lo)   ? lo
                       : r >= static_cast<double>(hi) ? hi
                                                      : static_cast<int64_t>(r));
    }
  }
  return std::vector<Tensor>{std::move(result)};
}

//===----------------------------------------------------------------------===//
// GridSample
//===----------------------------------------------------------------------===//

/// Normalised coordinate \p g in [-1, 1] to a position along an axis of
/// \p len elements: the corner pixels' centres (align_corners) or their
/// outer edges are -1 and 1.
double gridPosition(double g, int64_t len, bool alignCorners) {
  const double n = static_cast<double>(len);
  return alignCorners ? (g + 1) / 2 * (n - 1) : ((g + 1) * n - 1) / 2;
}

/// \p x reflected into [lo, hi] (repeatedly, as a mirror at each end).
double reflectInto(double x, double lo, double hi) {
  const double span = hi - lo;
  if (!(span > 0)) return lo;
  if (x >= lo && x <= hi) return x;
  const bool below = x < lo;
  const double d = below ? lo - x : x - hi;
  const double folds = std::floor(d / span);
  const double r = d - folds * span;
  const bool even = std::fmod(folds, 2.0) == 0;
  return below == even ? lo + r : hi - r;
}

/// \p f (an integral value: a floor or a rounding) as a tap index. A
/// position that is NaN, infinite or beyond +-2^60 (a grid or region
/// coordinate of NaN / inf / 1e30) converts to +-2^60: outside any tensor,
/// so zeros padding reads 0 and border / reflection map it in, with no
/// undefined float-to-int conversion or overflow in the taps' arithmetic
/// (UBSan: red team s26).
int64_t tapBase(double f) {
  constexpr int64_t kFar = int64_t{1} << 60;
  if (!(f > -static_cast<double>(kFar))) return -kFar;
  if (!(f < static_cast<double>(kFar))) return kFar;
  return static_cast<int64_t>(f);
}

/// Keys' cubic weights (A = -0.75) of the four taps floor(x) - 1 .. + 2 at
/// fraction \p t = x - floor(x).
void cubicWeights(double t, double w[4]) {
  const double A = -0.75;
  auto outer = [A](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };  // 1 <= d <= 2
  auto inner = [A](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };       // 0 <= d <= 1
  w[0] = outer(t + 1);
  w[1] = inner(t);
  w[2] = inner(1 - t);
  w[3] = outer(2 - t);
}

/// GridSample: for each batch n, channel c and grid point p, X[n, c]
/// sampled at grid[n, p] (x, y, z: the innermost spatial axis first),
/// normalised to [-1, 1] (align_corners: the corner pixels' centres, else
/// their outer edges). Points outside the input: zeros reads 0 for every
/// tap outside; border clamps the position into [0, len - 1] and the taps
/// into the input; reflection mirrors the position at the borders (the
/// centres with align_corners, else the edges) and each tap likewise.
/// nearest rounds half to even; linear weighs 2^r taps, cubic 4^2 (2-D).
Result gridSample(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *grid, requireInput(args, 1));
  FUSEC_RETURN_IF_ERROR(requireFloat(*x, "X"));
  FUSEC_RETURN_IF_ERROR(requireFloat(*grid, "grid"));
  const std::string mode = args.node.attrS("mode"), pad = args.node.attrS("padding_mode");
  const bool align = args.node.attrI("align_corners") != 0;
  const bool nearest = mode == "nearest", cubic = mode == "cubic" || mode == "bicubic";
  if (!nearest && !cubic && mode != "linear" && mode != "bilinear")
    return invalidArg("GridSample mode '", mode, "' is not linear, nearest or cubic");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    return invalidArg("GridSample padding_mode '", pad, "' is not zeros, border or reflection");
  const ir::Shape &xs = x->shape(), &gs = grid->shape();
  const int64_t r = x->rank() - 2;
  if (r < 1) return invalidArg("GridSample X must have rank >= 3, got ", shapeStr(xs));
  if (grid->rank() != x->rank() || gs[0] != xs[0] || gs[grid->rank() - 1] != r)
    return invalidArg("GridSample grid ", shapeStr(gs), " does not match X ", shapeStr(xs));
  if (cubic && r != 2) return invalidArg("GridSample cubic mode needs a 4-D X, got ", shapeStr(xs));
  const int64_t N = xs[0], C = xs[1];
  ir::Shape os = {N, C};
  int64_t points = 1, pixels = 1;
  for (int64_t d = 0; d < r; ++d) {
    os.push_back(gs[1 + d]);
    points *= gs[1 + d];
    pixels *= xs[2 + d];
  }
  FUSEC_RETURN_IF_ERROR(ir::checkTensorSize(x->dtype(), os, "GridSample result"));
  Tensor out(x->dtype(), os);
  std::vector<double> lo(r), hi(r);
  for (int64_t d = 0; d < r; ++d) {
    lo[d] = align ? 0.0 : -0.5;
    hi[d] = align ? static_cast<double>(xs[2 + d] - 1) : static_cast<double>(xs[2 + d]) - 0.5;
  }
  // Per axis: a tap index to the element it reads (-1 = outside: zero).
  auto tapIndex = [&](int64_t d, int64_t i) -> int64_t {
    const int64_t len = xs[2 + d];
    if (i >= 0 && i < len) return i;
    if (pad == "zeros") return -1;
    if (pad == "border") return std::clamp<int64_t>(i, 0, len - 1);
    const int64_t j = static_cast<int64_t>(reflectInto(static_cast<double>(i), lo[d], hi[d]));
    return std::clamp<int64_t>(j, 0, len - 1);
  };
  const int64_t taps1 = nearest ? 1 : cubic ? 4 : 2;
  std::vector<double> pos(r);
  std::vector<std::vector<int64_t>> idx(r, std::vector<int64_t>(taps1));
  std::vector<std::vector<double>> w(r, std::vector<double>(taps1));
  std::vector<int64_t> tap(r);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t p = 0; p < points; ++p) {
      const int64_t gbase = (n * points + p) * r;
      for (int64_t d = 0; d < r; ++d) {
        // grid's coordinates run from the innermost axis out.
        double v = gridPosition(grid->getDouble(gbase + (r - 1 - d)), xs[2 + d], align);
        if (nearest) v = std::nearbyint(v);
        if (v < lo[d] || v > hi[d]) {
          if (pad == "border") v = std::clamp(v, 0.0, static_cast<double>(xs[2 + d] - 1));
          else if (pad == "reflection") v = reflectInto(v, lo[d], hi[d]);
        }
        pos[d] = v;
        if (nearest) {
          idx[d][0] = tapIndex(d, tapBase(std::nearbyint(v)));
          w[d][0] = 1;
        } else if (cubic) {
          const double f = std::floor(v);
          double cw[4];
          cubicWeights(v - f, cw);
          for (int t = 0; t < 4; ++t) {
            idx[d][t] = tapIndex(d, tapBase(f) - 1 + t);
            w[d][t] = cw[t];
          }
        } else {
          const double f = std::floor(v);
          idx[d][0] = tapIndex(d, tapBase(f));
          idx[d][1] = tapIndex(d, tapBase(f) + 1);
          w[d][0] = 1 - (v - f);
          w[d][1] = v - f;
        }
      }
      for (int64_t c = 0; c < C; ++c) {
        const int64_t xbase = (n * C + c) * pixels;
        double acc = 0;
        std::fill(tap.begin(), tap.end(), 0);
        while (true) {
          double wt = 1;
          int64_t off = 0;
          bool inside = true;
          for (int64_t d = 0; d < r; ++d) {
            const int64_t i = idx[d][tap[d]];
            wt *= w[d][tap[d]];
            if (i < 0) inside = false;
            off = off * xs[2 + d] + (i < 0 ? 0 : i);
          }
          if (inside) acc += wt * x->getDouble(xbase + off);
          int64_t d = r - 1;
          for (; d >= 0; --d) {
            if (++tap[d] < taps1) break;
            tap[d] = 0;
          }
          if (d < 0) break;
        }
        out.setDouble((n * C + c) * points + p, acc);
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

//===----------------------------------------------------------------------===//
// RoiAlign
//===----------------------------------------------------------------------===//

/// RoiAlign: region r (rois[r] = x1, y1, x2, y2, times spatial_scale, less
/// 0.5 with half_pixel) of image batch_indices[r] split into
/// output_height x output_width bins; each bin averages (mode avg) or maxes
/// its grid of sampling_ratio^2 bilinear samples (0: ceil(bin size) per
/// axis) at the sub-bin centres. A sample outside [-1, len] reads 0; one in
/// [-1, 0] reads the edge. mode max takes the largest weighted tap of each
/// sample, as ONNX Runtime does.
Result roiAlign(const KernelArgs &args) {
  FUSEC_ASSIGN_OR_RETURN(const Tensor *x, requireInput(args, 0));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *rois, requireInput(args, 1));
  FUSEC_ASSIGN_OR_RETURN(const Tensor *bidx, requireInput(args, 2));
  FUSEC_RETURN_IF_ERROR(requireFloat(*x, "X"));
  FUSEC_RETURN_IF_ERROR(requireFloat(*rois, "rois"));
  if (x->rank() != 4) return invalidArg("RoiAlign X must be 4-D, got ", shapeStr(x->shape()));
  if (rois->rank() != 2 || rois->shape()[1] != 4)
    return invalidArg("RoiAlign rois must be [num_rois, 4], got ", shapeStr(rois->shape()));
  FUSEC_ASSIGN_OR_RETURN(std::vector<int64_t> batch, readInts(*bidx, "batch_indices"));
  const int64_t R = rois->shape()[0];
  if (static_cast<int64_t>(batch.size()) != R)
    return invalidArg("RoiAlign batch_indices has ", batch.size(), " entries for ", R, " rois");
  const int64_t N = x->shape()[0], C = x->shape()[1], H = x->shape()[2], W = x->shape()[3];
  const int64_t oh = args.node.attrI("output_height"), ow = args.node.attrI("output_width");
  const int64_t ratio = args.node.attrI("sampling_ratio");
  const double scale = args.node.attrF("spatial_scale");
  const bool halfPixel = args.node.attrS("coordinate_transformation_mode") == "half_pixel";
  const bool isMax = args.node.attrS("mode") == "max";
  if (oh < 1 || ow < 1 || ratio < 0) return invalidArg("RoiAlign output size or sampling_ratio out of range");
  Tensor out(x->dtype(), {R, C, oh, ow});
  const double off = halfPixel ? 0.5 : 0.0;
  struct Sample { int64_t i[4]; double w[4]; };
  for (int64_t r = 0; r < R; ++r) {
    const int64_t b = batch[r];
    if (b < 0 || b >= N) return invalidArg("RoiAlign batch index ", b, " is outside [0, ", N, ")");
    const double x1 = rois->getDouble(r * 4) * scale - off, y1 = rois->getDouble(r * 4 + 1) * scale - off;
    const double x2 = rois->getDouble(r * 4 + 2) * scale - off, y2 = rois->getDouble(r * 4 + 3) * scale - off;
    double rw = x2 - x1, rh = y2 - y1;
    if (!halfPixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
    // sampling_ratio 0: ceil(bin size) samples per axis. A NaN or
    // non-positive size takes one sample (outside the image: 0); a size whose
    // grid would exceed 2^20 samples per axis is refused (a region of 1e30
    // pixels converted to int64 was undefined, and 1e7 allocated 1e14 samples).
    auto adaptive = [&](double size, int64_t bins, const char *axis) -> absl::StatusOr<int64_t> {
      if (ratio > 0) return ratio;
      const double n = std::ceil(size / static_cast<double>(bins));
      if (!(n >= 1)) return int64_t{1};
      if (n > static_cast<double>(int64_t{1} << 20))
        return invalidArg("RoiAlign region ", r, ": sampling_ratio 0 would take ", n, " samples per bin along ",
                          axis, " (more than 2^20)");
      return static_cast<int64_t>(n);
    };
    FUSEC_ASSIGN_OR_RETURN(const int64_t gh, adaptive(rh, oh, "y"));
    FUSEC_ASSIGN_OR_RETURN(const int64_t gw, adaptive(rw, ow, "x"));
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    for (int64_t ph = 0; ph < oh; ++ph) {
      for (int64_t pw = 0; pw < ow; ++pw) {
        std::vector<Sample> samples;
        for (int64_t iy = 0; iy < gh; ++iy) {
          double y = y1 + static_cast<double>(ph) * bh + (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
          for (int64_t ix = 0; ix < gw; ++ix) {
            double xx = x1 + static_cast<double>(pw) * bw + (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
            Sample s{{0, 0, 0, 0}, {0, 0, 0, 0}};
            // NaN coordinates (a NaN region or spatial_scale) read 0, like
            // the outside: converting them to an index was undefined.
            if (std::isfinite(y) && std::isfinite(xx) &&
                !(y < -1.0 || y > static_cast<double>(H) || xx < -1.0 || xx > static_cast<double>(W))) {
              double yy = std::max(y, 0.0), xc = std::max(xx, 0.0);
              int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xc), yh, xh;
              if (yl >= H - 1) { yh = yl = H - 1; yy = static_cast<double>(yl); } else { yh = yl + 1; }
              if (xl >= W - 1) { xh = xl = W - 1; xc = static_cast<double>(xl); } else { xh = xl + 1; }
              const double ly = yy - static_cast<double>(yl), lx = xc - static_cast<double>(xl);
              const double hy = 1 - ly, hx = 1 - lx;
              s = Sample{{yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh},
                         {hy * hx, hy * lx, ly * hx, ly * lx}};
            }
            samples.push_back(s);
          }
        }
        for (int64_t c = 0; c < C; ++c) {
          const int64_t base = (b * C + c) * H * W;
          double acc = 0;
          bool first = true;
          for (const Sample &s : samples) {
            if (isMax) {
              double v = s.w[0] * x->getDouble(base + s.i[0]);
              for (int t = 1; t < 4; ++t) v = std::max(v, s.w[t] * x->getDouble(base + s.i[t]));
              acc = first ? v : std::max(acc, v);
              first = false;
            } else {
              for (int t = 0; t < 4; ++t) acc += s.w[t] * x->getDouble(base + s.i[t]);
            }
          }
          out.setDouble(((r * C + c) * oh + ph) * ow + pw, isMax ? acc : acc / count);
        }
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void registerResizeKernels(KernelTable &t) {
  t[static_cast<size_t>(ir::OpKind::kResize)] = resize;
  t[static_cast<size_t>(ir::OpKind::kGridSample)] = gridSample;
  t[static_cast<size_t>(ir::OpKind::kRoiAlign)] = roiAlign;
}

}  // namespace fusec::interp
