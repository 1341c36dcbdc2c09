//===- GridSample.cpp - GridSample and RoiAlign as gathers of weighted taps -===//
//
// gridSampleAt(): the value of a GridSample output at (n, c, p...). Per
// spatial axis d (grid's coordinate r-1-d: the grid lists x first) the
// normalised coordinate g becomes a position along the axis,
// align_corners ? (g+1)/2 (len-1) : ((g+1) len - 1)/2, rounded half to even
// for nearest; a position outside [lo, hi] (the corner centres with
// align_corners, else the outer edges) is clamped into [0, len-1] (border)
// or mirrored at lo and hi (reflection). The taps are floor(pos) .. +1
// (linear, weights 1-t and t) or floor(pos)-1 .. +2 (cubic, Keys' kernel
// with A = -0.75), each read from X where it lies inside, else 0 (zeros),
// the nearest element (border) or its mirror image (reflection). The value
// is the sum over the taps' product grid. Coordinates and weights are f64
// expressions, like the reference interpreter's double arithmetic; the
// taps' indices come from grid data, so X is read by a gather.
//
// lowerRoiAlign(): RoiAlign as a kernel of its own over the output
// [R, C, oh, ow]: per region the box (rois[r] times spatial_scale, less 0.5
// with half_pixel; at least 1 x 1 with output_half_pixel), per bin a fixed
// sampling_ratio^2 grid of bilinear samples at the sub-bin centres (a
// sample outside [-1, len] reads 0, one in [-1, 0] the edge), averaged or
// maxed (the largest weighted tap of each sample, as ONNX Runtime).
// sampling_ratio 0 (a sample count that depends on each region's size) is
// refused with that reason.
//
//===----------------------------------------------------------------------===//
#include "program/lowering/GroupLowering.h"

#include <string>

namespace fusec::program::lowering {

absl::StatusOr<int> GroupLowering::gridSampleAt(const Node &n, const std::vector<int> &idx) {
  FUSEC_ASSIGN_OR_RETURN(Shape xs, staticShape(n.input(0)));
  const int64_t r = static_cast<int64_t>(xs.size()) - 2;
  if (r < 1 || static_cast<int64_t>(idx.size()) != r + 2) return unimplemented(n, "index rank mismatch");
  const std::string mode = n.attrS("mode"), pad = n.attrS("padding_mode");
  const bool align = n.attrI("align_corners") != 0;
  const bool nearest = mode == "nearest", cubic = mode == "cubic" || mode == "bicubic";
  for (int64_t d = 0; d < r; ++d)
    if (xs[2 + d] == 0) return unimplemented(n, "samples an empty spatial axis of X");

  const ScalarType f64 = ScalarType::kF64;
  auto k = [&](double v) { return spec_.constF(v, f64); };
  auto B = [&](BinaryOp op, int a, int b) { return bin(op, a, b); };
  // \p x mirrored into [lo, hi] (f64), any number of folds.
  auto reflect = [&](int x, double lo, double hi) {
    const double span = hi - lo;
    if (!(span > 0)) return k(lo);
    const int below = B(BinaryOp::kLt, x, k(lo));
    const int dist = spec_.select(below, B(BinaryOp::kSub, k(lo), x), B(BinaryOp::kSub, x, k(hi)));
    const int folds = un(UnaryOp::kFloor, B(BinaryOp::kDiv, dist, k(span)));
    const int rem = B(BinaryOp::kSub, dist, B(BinaryOp::kMul, folds, k(span)));
    const int half = un(UnaryOp::kFloor, B(BinaryOp::kMul, folds, k(0.5)));
    const int even = B(BinaryOp::kEq, folds, B(BinaryOp::kMul, half, k(2)));
    const int fromLo = B(BinaryOp::kAdd, k(lo), rem), fromHi = B(BinaryOp::kSub, k(hi), rem);
    const int mirrored = spec_.select(below, spec_.select(even, fromLo, fromHi), spec_.select(even, fromHi, fromLo));
    const int inside = B(BinaryOp::kAnd, B(BinaryOp::kGe, x, k(lo)), B(BinaryOp::kLe, x, k(hi)));
    return spec_.select(inside, x, mirrored);
  };

  const int64_t nt = nearest ? 1 : cubic ? 4 : 2;
  std::vector<std::vector<int>> tapIdx(r), tapW(r), tapIn(r);  // tapW -1: exactly 1; tapIn -1: inside
  for (int64_t d = 0; d < r; ++d) {
    const int64_t len = xs[2 + d];
    const double lo = align ? 0.0 : -0.5;
    const double hi = align ? static_cast<double>(len - 1) : static_cast<double>(len) - 0.5;
    std::vector<int> gi = {idx[0]};
    for (int64_t e = 0; e < r; ++e) gi.push_back(idx[2 + e]);
    gi.push_back(spec_.constI(r - 1 - d));
    FUSEC_ASSIGN_OR_RETURN(int g, valueAt(n.input(1), gi));
    g = spec_.cast(g, f64);
    const double L = static_cast<double>(len);
    int pos = align ? B(BinaryOp::kMul, B(BinaryOp::kDiv, B(BinaryOp::kAdd, g, k(1)), k(2)), k(L - 1))
                    : B(BinaryOp::kDiv, B(BinaryOp::kSub, B(BinaryOp::kMul, B(BinaryOp::kAdd, g, k(1)), k(L)), k(1)), k(2));
    if (nearest) pos = un(UnaryOp::kRound, pos);  // half to even
    if (pad == "border") {
      const int outside = B(BinaryOp::kOr, B(BinaryOp::kLt, pos, k(lo)), B(BinaryOp::kGt, pos, k(hi)));
      const int clamped = B(BinaryOp::kMin, B(BinaryOp::kMax, pos, k(0)), k(L - 1));
      pos = spec_.select(outside, clamped, pos);
    } else if (pad == "reflection") {
      pos = reflect(pos, lo, hi);
    }
    // One tap index (f64, integral) to the element it reads and whether it reads one.
    auto place = [&](int i, std::vector<int> &idxOut, std::vector<int> &inOut) {
      int j = i;
      if (pad == "reflection") j = un(UnaryOp::kFloor, reflect(i, lo, hi));
      int ji = spec_.cast(j, ScalarType::kIdx);
      const int inside = B(BinaryOp::kAnd, B(BinaryOp::kGe, ji, spec_.constI(0)), B(BinaryOp::kLt, ji, spec_.constI(len)));
      ji = B(BinaryOp::kMin, B(BinaryOp::kMax, ji, spec_.constI(0)), spec_.constI(len - 1));
      idxOut.push_back(ji);
      inOut.push_back(pad == "zeros" ? inside : -1);
    };
    if (nearest) {
      place(pos, tapIdx[d], tapIn[d]);
      tapW[d] = {-1};
      continue;
    }
    const int fl = un(UnaryOp::kFloor, pos);
    const int t = B(BinaryOp::kSub, pos, fl);
    if (cubic) {
      const double A = -0.75;
      auto outer = [&](int x) {  // 1 <= x <= 2: ((A x - 5A) x + 8A) x - 4A
        return B(BinaryOp::kSub,
                 B(BinaryOp::kMul, B(BinaryOp::kAdd, B(BinaryOp::kMul, B(BinaryOp::kSub, B(BinaryOp::kMul, k(A), x), k(5 * A)), x), k(8 * A)), x),
                 k(4 * A));
      };
      auto inner = [&](int x) {  // 0 <= x <= 1: ((A+2) x - (A+3)) x^2 + 1
        return B(BinaryOp::kAdd,
                 B(BinaryOp::kMul, B(BinaryOp::kMul, B(BinaryOp::kSub, B(BinaryOp::kMul, k(A + 2), x), k(A + 3)), x), x),
                 k(1));
      };
      const int omt = B(BinaryOp::kSub, k(1), t);
      tapW[d] = {outer(B(BinaryOp::kAdd, t, k(1))), inner(t), inner(omt), outer(B(BinaryOp::kSub, k(2), t))};
      for (int64_t q = 0; q < 4; ++q) place(B(BinaryOp::kAdd, fl, k(static_cast<double>(q - 1))), tapIdx[d], tapIn[d]);
    } else {
      tapW[d] = {B(BinaryOp::kSub, k(1), t), t};
      place(fl, tapIdx[d], tapIn[d]);
      place(B(BinaryOp::kAdd, fl, k(1)), tapIdx[d], tapIn[d]);
    }
  }

  // Sum over the product grid of taps, in f64.
  std::vector<int64_t> at(r, 0);
  int acc = -1;
  while (true) {
    std::vector<int> sub = {idx[0], idx[1]};
    int w = -1, guard = -1;
    for (int64_t d = 0; d < r; ++d) {
      sub.push_back(tapIdx[d][at[d]]);
      const int wd = tapW[d][at[d]], gd = tapIn[d][at[d]];
      if (wd >= 0) w = w < 0 ? wd : B(BinaryOp::kMul, w, wd);
      if (gd >= 0) guard = guard < 0 ? gd : B(BinaryOp::kAnd, guard, gd);
    }
    int v = -1;
    if (guard >= 0) {
      FUSEC_ASSIGN_OR_RETURN(v, guardedAt(n.input(0), sub, guard));
      v = spec_.cast(v, f64);
      v = spec_.select(guard, v, k(0));
    } else {
      FUSEC_ASSIGN_OR_RETURN(v, valueAt(n.input(0), sub));
      v = spec_.cast(v, f64);
    }
    if (w >= 0) v = B(BinaryOp::kMul, w, v);
    acc = acc < 0 ? v : B(BinaryOp::kAdd, acc, v);
    int64_t d = r - 1;
    for (; d >= 0; --d) {
      if (++at[d] < nt) break;
      at[d] = 0;
    }
    if (d < 0) break;
  }
  return spec_.cast(acc, computeTypeOf(n.output(0)->type().dtype));
}

/// The most samples per RoiAlign bin the kernel unrolls (4 loads each).
constexpr int64_t kMaxRoiSamples = 64;

absl::Status GroupLowering::lowerRoiAlign(const Node &n) {
  FUSEC_ASSIGN_OR_RETURN(Shape xs, staticShape(n.input(0)));
  FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(n.output(0)));
  if (xs.size() != 4 || os.size() != 4) return unimplemented(n, "RoiAlign needs a 4-D X");
  const int64_t ratio = n.attrI("sampling_ratio");
  if (ratio <= 0)
    return unimplemented(n, "sampling_ratio = 0 samples each bin ceil(bin size) times, a count that depends on "
                            "each region's size (data); export with a fixed sampling_ratio > 0");
  if (ratio * ratio > kMaxRoiSamples)
    return unimplemented(n, absl::StrCat("sampling_ratio ", ratio, ": the kernel unrolls at most ", kMaxRoiSamples,
                                         " samples per bin"));
  if (prod(os) == 0) return absl::OkStatus();
  const int64_t N = xs[0], H = xs[2], W = xs[3], oh = os[2], ow = os[3];
  if (H == 0 || W == 0) return unimplemented(n, "samples an empty X");
  domainShape_ = os;
  for (int64_t e : os) domainIdx_.push_back(spec_.index(spec_.addDim(e, false)));
  numParallel_ = os.size();
  const int r = domainIdx_[0], ch = domainIdx_[1], ph = domainIdx_[2], pw = domainIdx_[3];
  const ScalarType f64 = ScalarType::kF64;
  auto k = [&](double v) { return spec_.constF(v, f64); };
  auto B = [&](BinaryOp op, int a, int b) { return bin(op, a, b); };
  const double scale = n.attrF("spatial_scale");
  const bool halfPixel = n.attrS("coordinate_transformation_mode") == "half_pixel";
  const bool isMax = n.attrS("mode") == "max";
  auto roi = [&](int64_t i) -> absl::StatusOr<int> {
    FUSEC_ASSIGN_OR_RETURN(int v, valueAt(n.input(1), {r, spec_.constI(i)}));
    return B(BinaryOp::kSub, B(BinaryOp::kMul, spec_.cast(v, f64), k(scale)), k(halfPixel ? 0.5 : 0.0));
  };
  FUSEC_ASSIGN_OR_RETURN(int x1, roi(0));
  FUSEC_ASSIGN_OR_RETURN(int y1, roi(1));
  FUSEC_ASSIGN_OR_RETURN(int x2, roi(2));
  FUSEC_ASSIGN_OR_RETURN(int y2, roi(3));
  int rw = B(BinaryOp::kSub, x2, x1), rh = B(BinaryOp::kSub, y2, y1);
  if (!halfPixel) {
    rw = B(BinaryOp::kMax, rw, k(1));
    rh = B(BinaryOp::kMax, rh, k(1));
  }
  const int bh = B(BinaryOp::kDiv, rh, k(static_cast<double>(oh)));
  const int bw = B(BinaryOp::kDiv, rw, k(static_cast<double>(ow)));
  // The image: batch_indices[r], clamped into X (the reference refuses one outside).
  FUSEC_ASSIGN_OR_RETURN(int bv, valueAt(n.input(2), {r}));
  const int b = B(BinaryOp::kMin, B(BinaryOp::kMax, spec_.cast(bv, ScalarType::kIdx), spec_.constI(0)),
                  spec_.constI(N - 1));
  // One axis of a sample: the clamped low / high taps and the fraction.
  struct Axis { int lo, hi, frac; };
  auto axis = [&](int pos, int64_t len) {
    const int p0 = B(BinaryOp::kMax, pos, k(0));
    const int fl = un(UnaryOp::kFloor, p0);
    const int atEnd = B(BinaryOp::kGe, fl, k(static_cast<double>(len - 1)));
    const int lo = spec_.cast(spec_.select(atEnd, k(static_cast<double>(len - 1)), fl), ScalarType::kIdx);
    const int hi = B(BinaryOp::kMin, B(BinaryOp::kAdd, lo, spec_.constI(1)), spec_.constI(len - 1));
    const int frac = spec_.select(atEnd, k(0), B(BinaryOp::kSub, p0, fl));
    return Axis{lo, hi, frac};
  };
  const double g = static_cast<double>(ratio);
  int acc = -1;
  for (int64_t iy = 0; iy < ratio; ++iy) {
    const int y = B(BinaryOp::kAdd, B(BinaryOp::kAdd, y1, B(BinaryOp::kMul, spec_.cast(ph, f64), bh)),
                    B(BinaryOp::kDiv, B(BinaryOp::kMul, k(static_cast<double>(iy) + 0.5), bh), k(g)));
    for (int64_t ix = 0; ix < ratio; ++ix) {
      const int x = B(BinaryOp::kAdd, B(BinaryOp::kAdd, x1, B(BinaryOp::kMul, spec_.cast(pw, f64), bw)),
                      B(BinaryOp::kDiv, B(BinaryOp::kMul, k(static_cast<double>(ix) + 0.5), bw), k(g)));
      const int inside = un(UnaryOp::kNot, B(BinaryOp::kOr, B(BinaryOp::kOr, B(BinaryOp::kLt, y, k(-1)),
                                                                 B(BinaryOp::kGt, y, k(static_cast<double>(H)))),
                                                B(BinaryOp::kOr, B(BinaryOp::kLt, x, k(-1)),
                                                  B(BinaryOp::kGt, x, k(static_cast<double>(W))))));
      const Axis ay = axis(y, H), ax = axis(x, W);
      const int ly = ay.frac, lx = ax.frac, hy = B(BinaryOp::kSub, k(1), ly), hx = B(BinaryOp::kSub, k(1), lx);
      const int taps[4][2] = {{ay.lo, ax.lo}, {ay.lo, ax.hi}, {ay.hi, ax.lo}, {ay.hi, ax.hi}};
      const int w[4] = {B(BinaryOp::kMul, hy, hx), B(BinaryOp::kMul, hy, lx), B(BinaryOp::kMul, ly, hx),
                        B(BinaryOp::kMul, ly, lx)};
      int sample = -1;
      for (int t = 0; t < 4; ++t) {
        FUSEC_ASSIGN_OR_RETURN(int v, valueAt(n.input(0), {b, ch, taps[t][0], taps[t][1]}));
        const int wv = B(BinaryOp::kMul, spec_.select(inside, w[t], k(0)), spec_.cast(v, f64));
        sample = sample < 0 ? wv : B(isMax ? BinaryOp::kMax : BinaryOp::kAdd, sample, wv);
      }
      acc = acc < 0 ? sample : B(isMax ? BinaryOp::kMax : BinaryOp::kAdd, acc, sample);
    }
  }
  if (!isMax) acc = B(BinaryOp::kDiv, acc, k(g * g));
  spec_.addStore(bufferFor(n.output(0), true), domainIdx_, spec_.cast(acc, computeTypeOf(n.output(0)->type().dtype)));
  return absl::OkStatus();
}

}  // namespace fusec::program::lowering
