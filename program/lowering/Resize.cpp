//===- Resize.cpp - Resize as a weighted window of taps ---------------------===//
//
// resizeAt(): the value of a Resize output at a point. Per resized axis
// (ir::ResizeAxis::identity false) the output index maps to a source
// coordinate x (coordinate_transformation_mode), f = (x integral ? x - 1 :
// floor(x)), r = x - f, and the taps f + 1 - n/2 .. f + n/2, clamped into
// the input (edge padding), with the weights of ir::resizeTaps: nearest
// picks one tap (nearest_mode), linear 1 - r and r, cubic Keys' kernel
// (cubic_coeff_a; exclude_outside zeroes the taps outside and
// renormalises). The value is the sum over the taps' product grid
// (2^k loads for k linear axes, 4^k cubic). Coordinates and weights are
// f64 expressions, so the taps agree with the reference interpreter's
// double arithmetic; the sum runs in the data's compute type (f64 for
// integer data, then rounded half to even and saturated). tf_crop_and_resize
// yields extrapolation_value where a coordinate leaves the input.
// antialias is refused here (the interpreter implements it).
//
//===----------------------------------------------------------------------===//
#include "program/lowering/GroupLowering.h"

#include <cmath>
#include <optional>

#include "ir/Resample.h"

namespace fusec::program::lowering {

namespace {

/// The saturating range of integer dtype \p t (round-trip through f64).
std::pair<double, double> intBounds(ir::DType t) {
  switch (t) {
    case ir::DType::kI8: return {-128, 127};
    case ir::DType::kU8: return {0, 255};
    case ir::DType::kI16: return {-32768, 32767};
    case ir::DType::kU16: return {0, 65535};
    case ir::DType::kI32: return {-2147483648.0, 2147483647.0};
    case ir::DType::kU32: return {0, 4294967295.0};
    default: return {-9.2233720368547758e18, 9.2233720368547748e18};
  }
}

}  // namespace

absl::StatusOr<int> GroupLowering::resizeAt(const Node &n, const std::vector<int> &idx) {
  FUSEC_ASSIGN_OR_RETURN(Shape is, staticShape(n.input(0)));
  absl::StatusOr<ir::ResizeParams> ps = ir::resizeParams(n);
  if (!ps.ok()) return unimplemented(n, std::string(ps.status().message()));
  const ir::ResizeParams &p = *ps;
  if (p.antialias)
    return unimplemented(n, "antialias = 1 is not lowered to a kernel (the reference "
                            "interpreter implements it); export with antialias off");
  // roi, scales and sizes must be compile-time constants; an empty one is absent.
  static const char *const kNames[] = {"", "roi", "scales", "sizes"};
  std::optional<std::vector<double>> f[3];
  std::optional<std::vector<int64_t>> sizes;
  for (int i = 1; i <= 3; ++i) {
    const Value *v = n.input(i);
    if (!v) continue;
    if (v->type().rankKnown && v->type().numElements() == std::optional<int64_t>(0)) continue;
    if (!v->isConstant())
      return unimplemented(n, absl::StrCat(kNames[i], " arrive at run time (input '", v->name(),
                                           "'); fusec compiles Resize with constant roi, scales "
                                           "and sizes (ones computed from input shapes fold once "
                                           "--shape binds them)"));
    if (v->constant()->numElements() == 0) continue;
    if (i == 3) sizes = v->constant()->toInts();
    else f[i - 1] = v->constant()->toDoubles();
  }
  absl::StatusOr<std::vector<ir::ResizeAxis>> geo =
      ir::resizeGeometry(n, is, f[0] ? &*f[0] : nullptr, f[1] ? &*f[1] : nullptr,
                         sizes ? &*sizes : nullptr);
  if (!geo.ok()) return unimplemented(n, std::string(geo.status().message()));
  const int64_t rank = static_cast<int64_t>(is.size());
  if (static_cast<int64_t>(idx.size()) != rank) return unimplemented(n, "index rank mismatch");
  for (int64_t d = 0; d < rank; ++d)
    if (is[d] == 0 && (*geo)[d].outLen > 0)
      return unimplemented(n, absl::StrCat("resizes the empty axis ", d, " to ", (*geo)[d].outLen));

  const ScalarType f64 = ScalarType::kF64;
  auto k = [&](double v) { return spec_.constF(v, f64); };
  // Per axis: the tap indices (into the input) and their f64 weights
  // (weight -1 = exactly 1, nothing to multiply).
  std::vector<std::vector<int>> tapIdx(rank), tapW(rank);
  int outside = -1;  // any coordinate outside the input (tf_crop_and_resize)
  for (int64_t d = 0; d < rank; ++d) {
    const ir::ResizeAxis &a = (*geo)[d];
    if (a.identity) {
      tapIdx[d] = {idx[d]};
      tapW[d] = {-1};
      continue;
    }
    const double in = static_cast<double>(a.inLen), outW = a.scale * in;
    const int y = spec_.cast(idx[d], f64);
    int x = -1;
    using C = ir::ResizeParams::Coord;
    switch (p.coord) {
      case C::kAlignCorners:
        x = outW == 1 ? k(0) : bin(BinaryOp::kDiv, bin(BinaryOp::kMul, y, k(in - 1)), k(outW - 1));
        break;
      case C::kAsymmetric:
        x = bin(BinaryOp::kDiv, y, k(a.scale));
        break;
      case C::kTfCropAndResize:
        x = outW == 1 ? k((a.roiEnd - a.roiStart) * (in - 1) / 2)
                      : bin(BinaryOp::kDiv,
                            bin(BinaryOp::kMul, bin(BinaryOp::kMul, y, k(a.roiEnd - a.roiStart)),
                                k(in - 1)),
                            k(outW - 1));
        x = bin(BinaryOp::kAdd, x, k(a.roiStart * (in - 1)));
        {
          const int out = bin(BinaryOp::kOr, bin(BinaryOp::kLt, x, k(0)), bin(BinaryOp::kGt, x, k(in - 1)));
          outside = outside < 0 ? out : bin(BinaryOp::kOr, outside, out);
        }
        break;
      case C::kPytorchHalfPixel:
        x = outW == 1 ? k(-0.5)
                      : bin(BinaryOp::kSub, bin(BinaryOp::kDiv, bin(BinaryOp::kAdd, y, k(0.5)), k(a.scale)),
                            k(0.5));
        break;
      case C::kHalfPixel:
        x = bin(BinaryOp::kSub, bin(BinaryOp::kDiv, bin(BinaryOp::kAdd, y, k(0.5)), k(a.scale)), k(0.5));
        break;
      case C::kHalfPixelSymmetric: {
        const double offset = in / 2 * (1 - static_cast<double>(a.outLen) / outW);
        x = bin(BinaryOp::kSub,
                bin(BinaryOp::kAdd, k(offset),
                    bin(BinaryOp::kDiv, bin(BinaryOp::kAdd, y, k(0.5)), k(a.scale))),
                k(0.5));
        break;
      }
      case C::kTfHalfPixelForNn:
        x = bin(BinaryOp::kDiv, bin(BinaryOp::kAdd, y, k(0.5)), k(a.scale));
        break;
    }
    const int fl = un(UnaryOp::kFloor, x);
    const int fr = spec_.select(bin(BinaryOp::kEq, x, fl), bin(BinaryOp::kSub, x, k(1)), fl);
    const int r = bin(BinaryOp::kSub, x, fr);  // in (0, 1]
    const int64_t nt = ir::resizeTapCount(p, a);
    const int first = bin(BinaryOp::kAdd, spec_.cast(fr, ScalarType::kIdx), spec_.constI(1 - nt / 2));
    auto clampIdx = [&](int e) {
      return bin(BinaryOp::kMin, bin(BinaryOp::kMax, e, spec_.constI(0)), spec_.constI(a.inLen - 1));
    };
    using M = ir::ResizeParams::Mode;
    if (p.mode == M::kNearest) {
      // The upper tap (first + 1) unless nearest_mode picks the lower one;
      // an integral coordinate (r == 1) is always the upper tap.
      int upper = -1;
      using N = ir::ResizeParams::Nearest;
      switch (p.nearest) {
        case N::kRoundPreferFloor: upper = bin(BinaryOp::kGt, r, k(0.5)); break;
        case N::kRoundPreferCeil: upper = bin(BinaryOp::kGe, r, k(0.5)); break;
        case N::kFloor: upper = bin(BinaryOp::kEq, r, k(1)); break;
        case N::kCeil: upper = spec_.constB(true); break;
      }
      tapIdx[d] = {clampIdx(spec_.select(upper, bin(BinaryOp::kAdd, first, spec_.constI(1)), first))};
      tapW[d] = {-1};
      continue;
    }
    std::vector<int> w;
    if (p.mode == M::kLinear) {
      w = {bin(BinaryOp::kSub, k(1), r), r};
    } else {
      // Keys' kernel at distances r + 1, r, 1 - r, 2 - r (ir/Resample.cpp).
      const double A = p.cubicA;
      auto outer = [&](int t) {  // 1 <= t <= 2: A t^3 - 5A t^2 + 8A t - 4A
        return bin(BinaryOp::kSub,
                   bin(BinaryOp::kMul,
                       bin(BinaryOp::kAdd,
                           bin(BinaryOp::kMul, bin(BinaryOp::kSub, bin(BinaryOp::kMul, k(A), t), k(5 * A)), t),
                           k(8 * A)),
                       t),
                   k(4 * A));
      };
      auto inner = [&](int t) {  // 0 <= t <= 1: ((A+2) t - (A+3)) t^2 + 1
        return bin(BinaryOp::kAdd,
                   bin(BinaryOp::kMul,
                       bin(BinaryOp::kMul, bin(BinaryOp::kSub, bin(BinaryOp::kMul, k(A + 2), t), k(A + 3)), t),
                       t),
                   k(1));
      };
      const int omr = bin(BinaryOp::kSub, k(1), r);
      w = {outer(bin(BinaryOp::kAdd, r, k(1))), inner(r), inner(omr),
           outer(bin(BinaryOp::kSub, k(2), r))};
    }
    std::vector<int> ti;
    for (int64_t t = 0; t < nt; ++t) ti.push_back(bin(BinaryOp::kAdd, first, spec_.constI(t)));
    if (p.excludeOutside) {
      int sum = k(0);
      for (int64_t t = 0; t < nt; ++t) {
        const int inside = bin(BinaryOp::kAnd, bin(BinaryOp::kGe, ti[t], spec_.constI(0)),
                               bin(BinaryOp::kLt, ti[t], spec_.constI(a.inLen)));
        w[t] = spec_.select(inside, w[t], k(0));
        sum = bin(BinaryOp::kAdd, sum, w[t]);
      }
      sum = spec_.select(bin(BinaryOp::kEq, sum, k(0)), k(1), sum);
      for (int &wt : w) wt = bin(BinaryOp::kDiv, wt, sum);
    }
    for (int &e : ti) e = clampIdx(e);
    tapIdx[d] = ti;
    tapW[d] = w;
  }

  // Sum over the product grid of taps.
  const DType dt = n.input(0)->type().dtype;
  const bool isF = ir::isFloat(dt);
  std::vector<size_t> pos(rank, 0);
  int acc = -1;
  ScalarType at = ScalarType::kF32;
  while (true) {
    std::vector<int> sub(rank);
    int w = -1;
    for (int64_t d = 0; d < rank; ++d) {
      sub[d] = tapIdx[d][pos[d]];
      const int wd = tapW[d][pos[d]];
      if (wd >= 0) w = w < 0 ? wd : bin(BinaryOp::kMul, w, wd);
    }
    FUSEC_ASSIGN_OR_RETURN(int v, valueAt(n.input(0), sub));
    if (acc < 0) at = isF ? typeOf(v) : f64;
    v = spec_.cast(v, at);
    if (w >= 0) v = bin(BinaryOp::kMul, spec_.cast(w, at), v);
    acc = acc < 0 ? v : bin(BinaryOp::kAdd, acc, v);
    int64_t d = rank - 1;
    for (; d >= 0; --d) {
      if (++pos[d] < tapIdx[d].size()) break;
      pos[d] = 0;
    }
    if (d < 0) break;
  }
  if (!isF) {
    const auto [lo, hi] = intBounds(dt);
    acc = bin(BinaryOp::kMin, bin(BinaryOp::kMax, un(UnaryOp::kRound, acc), k(lo)), k(hi));
    acc = spec_.cast(acc, computeTypeOf(dt));
  }
  if (outside >= 0) {
    const ScalarType t = typeOf(acc);
    acc = spec_.select(outside, isFloatCompute(t) ? spec_.constF(p.extrapolation, t)
                                                  : spec_.constI(static_cast<int64_t>(p.extrapolation), t),
                       acc);
  }
  return acc;
}

}  // namespace fusec::program::lowering
