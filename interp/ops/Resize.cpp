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

}  // namespace

void registerResizeKernels(KernelTable &t) {
  t[static_cast<size_t>(ir::OpKind::kResize)] = resize;
}

}  // namespace fusec::interp
