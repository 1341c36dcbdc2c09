//===- Select.cpp - TopK and the scatters: kernels of their own -------------===//
//
// Three ops whose output elements each search a set of input elements, built
// as row reductions (KernelSpec kReduce) so that every backend that runs
// reduce specs (cuda, cpu) runs them, with no atomics and no second step:
//
//  - TopK: one row per point of the input without its axis, the reduced dim
//    over the axis. The k results come from k selection passes: pass r
//    takes the largest (smallest) value among the elements after pick r-1
//    in the order (value descending / ascending, then index ascending; NaN
//    above every number, as the reference's sort), then the lowest index
//    holding that value. 2k stages of reductions.
//  - ScatterElements / ScatterND: the domain is the output (data's shape)
//    plus one reduced dim over the updates that can land on an output
//    element (updates.shape[axis] / the index tuples). An element reduces
//    the updates whose index matches it (add: sum, mul: product, max, min)
//    and combines the result with data; reduction none takes the matching
//    update of the highest position (the last write of ONNX's sequential
//    definition). Duplicate indices therefore reduce in one kernel.
//
// Each output element scans all its candidate updates (and TopK each row k
// times), which is cheap for the sizes exporters use these ops at (top-k
// of a vocabulary or of detections, KV-cache writes, index_put) and is
// limited below so that a large one is refused with the reason.
//
//===----------------------------------------------------------------------===//
#include "program/lowering/GroupLowering.h"

#include <algorithm>
#include <limits>

namespace fusec::program::lowering {

namespace {

/// The largest k a TopK kernel selects (one pass over the row per result).
constexpr int64_t kMaxTopK = 256;
/// The most updates a scatter kernel scans per output element.
constexpr int64_t kMaxScatterCandidates = 16384;

}  // namespace

absl::Status GroupLowering::lowerTopK(const Node &n, const std::vector<const Value *> &outputs) {
  FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(n.input(0)));
  auto kv = constInts(n.input(1));
  if (!kv || kv->size() != 1)
    return unimplemented(n, "k (input 1) is not a constant; fusec compiles TopK with k known at "
                            "compile time");
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t axis = n.attrI("axis");
  if (axis < -rank || axis >= rank) return unimplemented(n, "axis out of range");
  if (axis < 0) axis += rank;
  const int64_t k = (*kv)[0], len = s[axis];
  if (k < 0 || k > len) return unimplemented(n, absl::StrCat("k = ", k, " is outside [0, ", len, "]"));
  if (k > kMaxTopK)
    return unimplemented(n, absl::StrCat("k = ", k, ": the TopK kernel selects the k results by k passes "
                                         "over each row and is limited to k <= ", kMaxTopK));
  const DType dt = n.input(0)->type().dtype;
  if (dt == DType::kU64)
    return unimplemented(n, "u64 values: kernels compare integers as i64");
  if (k == 0 || prod(s) == 0) return absl::OkStatus();  // nothing to store
  Shape par;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) par.push_back(s[d]);
  domainShape_ = par;
  domainShape_.push_back(len);
  for (int64_t e : par) domainIdx_.push_back(spec_.index(spec_.addDim(e, false)));
  numParallel_ = par.size();
  const int j = spec_.index(spec_.addDim(len, true));
  domainIdx_.push_back(j);
  spec_.kind = SpecKind::kReduce;
  std::vector<int> row(domainIdx_.begin(), domainIdx_.begin() + numParallel_);
  std::vector<int> xi = row;
  xi.insert(xi.begin() + axis, j);
  FUSEC_ASSIGN_OR_RETURN(int x, valueAt(n.input(0), xi));
  const ScalarType t = typeOf(x);
  const bool largest = n.attrI("largest") != 0;
  const int worst = isFloatCompute(t)
                        ? spec_.constF(largest ? -std::numeric_limits<double>::infinity()
                                               : std::numeric_limits<double>::infinity(), t)
                        : spec_.constI(largest ? std::numeric_limits<int64_t>::min()
                                               : std::numeric_limits<int64_t>::max(), t);
  const int jl = spec_.cast(j, ScalarType::kI64);
  const BinaryOp better = largest ? BinaryOp::kGt : BinaryOp::kLt;
  // NaN orders above every number (first for largest, last for smallest),
  // NaNs among themselves by index, as the reference's sort.
  const bool fl = isFloatCompute(t);
  const int isNan = fl ? un(UnaryOp::kIsNaN, x) : spec_.constB(false);
  const int num = fl ? un(UnaryOp::kNot, isNan) : spec_.constB(true);
  const int valuesBuf = std::count(outputs.begin(), outputs.end(), n.output(0)) ? bufferFor(n.output(0), true) : -1;
  const int indicesBuf = std::count(outputs.begin(), outputs.end(), n.output(1)) ? bufferFor(n.output(1), true) : -1;
  auto any = [&](int cond) {
    const int r = spec_.reduceResult(spec_.addReduction(
        ReduceKind::kMax, spec_.select(cond, spec_.constI(1, ScalarType::kI64), spec_.constI(0, ScalarType::kI64))));
    return bin(BinaryOp::kGt, r, spec_.constI(0, ScalarType::kI64));
  };
  int prevV = -1, prevI = -1, prevNan = spec_.constB(false);
  for (int64_t r = 0; r < k; ++r) {
    // Available: after the previous pick in the order (class, value, index).
    int avail = spec_.constB(true);
    if (r > 0) {
      const int afterIndex = bin(BinaryOp::kGt, jl, prevI);
      const int afterValue = bin(BinaryOp::kOr, bin(better, prevV, x),
                                 bin(BinaryOp::kAnd, bin(BinaryOp::kEq, x, prevV), afterIndex));
      if (!fl) avail = afterValue;
      else if (largest)
        avail = spec_.select(prevNan, bin(BinaryOp::kOr, num, bin(BinaryOp::kAnd, isNan, afterIndex)),
                             bin(BinaryOp::kAnd, num, afterValue));
      else
        avail = spec_.select(prevNan, bin(BinaryOp::kAnd, isNan, afterIndex),
                             bin(BinaryOp::kOr, isNan, afterValue));
    }
    const int v = spec_.reduceResult(spec_.addReduction(largest ? ReduceKind::kMax : ReduceKind::kMin,
                                                        spec_.select(bin(BinaryOp::kAnd, avail, num), x, worst)));
    int pickNan = spec_.constB(false);
    if (fl) pickNan = largest ? any(bin(BinaryOp::kAnd, avail, isNan))
                              : un(UnaryOp::kNot, any(bin(BinaryOp::kAnd, avail, num)));
    const int at = bin(BinaryOp::kAnd, avail,
                       fl ? spec_.select(pickNan, isNan, bin(BinaryOp::kAnd, num, bin(BinaryOp::kEq, x, v)))
                          : bin(BinaryOp::kEq, x, v));
    const int i = spec_.reduceResult(spec_.addReduction(
        ReduceKind::kMin, spec_.select(at, jl, spec_.constI(len, ScalarType::kI64))));
    std::vector<int> oi = row;
    oi.insert(oi.begin() + axis, spec_.constI(r));
    const int value = fl ? spec_.select(pickNan, spec_.constF(std::numeric_limits<double>::quiet_NaN(), t), v) : v;
    if (valuesBuf >= 0) spec_.addStore(valuesBuf, oi, spec_.cast(value, computeTypeOf(dt)));
    if (indicesBuf >= 0) spec_.addStore(indicesBuf, oi, i);
    prevV = v;
    prevI = i;
    prevNan = pickNan;
  }
  return absl::OkStatus();
}

absl::Status GroupLowering::lowerScatter(const Node &n) {
  const bool nd = n.kind() == OpKind::kScatterND;
  FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(n.input(0)));
  FUSEC_ASSIGN_OR_RETURN(Shape is, staticShape(n.input(1)));
  FUSEC_ASSIGN_OR_RETURN(Shape us, staticShape(n.input(2)));
  const int64_t rank = static_cast<int64_t>(s.size());
  const std::string red = n.attrS("reduction");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return unimplemented(n, absl::StrCat("reduction '", red, "'"));
  const DType dt = n.output(0)->type().dtype;
  if (dt == DType::kU64) return unimplemented(n, "u64 data: kernels compute integers as i64");
  // The candidate updates of an output element: a reduced dim of `cands`.
  int64_t axis = 0, m = 0, cands = 0;
  if (nd) {
    if (is.empty()) return unimplemented(n, "indices of rank 0");
    m = is.back();
    if (m > rank) return unimplemented(n, "indices.shape[-1] exceeds the data rank");
    cands = prod(is, 0, is.size() - 1);
  } else {
    axis = n.attrI("axis");
    if (axis < -rank || axis >= rank) return unimplemented(n, "axis out of range");
    if (axis < 0) axis += rank;
    if (static_cast<int64_t>(us.size()) != rank) return unimplemented(n, "updates rank differs from data");
    cands = us[axis];
  }
  if (cands > kMaxScatterCandidates)
    return unimplemented(n, absl::StrCat(
        cands, " updates per output element: the scatter kernel scans every update that can land "
               "on an element and is limited to ", kMaxScatterCandidates));
  if (prod(s) == 0) return absl::OkStatus();  // nothing to store
  domainShape_ = s;
  for (int64_t e : s) domainIdx_.push_back(spec_.index(spec_.addDim(e, false)));
  numParallel_ = s.size();
  const std::vector<int> p = domainIdx_;
  FUSEC_ASSIGN_OR_RETURN(int data, valueAt(n.input(0), p));
  const ScalarType st = computeTypeOf(dt);
  const ScalarType t = st == ScalarType::kBool ? ScalarType::kI64 : st;  // bool: moved as 0/1
  data = spec_.cast(data, t);
  const int out = bufferFor(n.output(0), true);
  if (cands == 0 || prod(us) == 0) {  // no update: a copy
    spec_.addStore(out, p, spec_.cast(data, st));
    return absl::OkStatus();
  }
  const int u = spec_.index(spec_.addDim(cands, true));
  domainShape_.push_back(cands);
  domainIdx_.push_back(u);
  spec_.kind = SpecKind::kReduce;
  auto normalized = [&](int idx, int64_t extent) {
    idx = spec_.cast(idx, ScalarType::kI64);
    return spec_.select(bin(BinaryOp::kLt, idx, spec_.constI(0, ScalarType::kI64)),
                        bin(BinaryOp::kAdd, idx, spec_.constI(extent, ScalarType::kI64)), idx);
  };
  int match = spec_.constB(true), upd = -1;
  if (nd) {
    // Tuple u of indices (row-major over indices.shape[:-1]); it names data
    // element p when its m indices equal p[0..m).
    const Shape tupleShape(is.begin(), is.end() - 1);
    std::vector<int> tq = spec_.delinearize(u, tupleShape);
    for (int64_t jj = 0; jj < m; ++jj) {
      std::vector<int> ii = tq;
      ii.push_back(spec_.constI(jj));
      FUSEC_ASSIGN_OR_RETURN(int idx, valueAt(n.input(1), ii));
      match = bin(BinaryOp::kAnd, match,
                  bin(BinaryOp::kEq, normalized(idx, s[jj]), spec_.cast(p[jj], ScalarType::kI64)));
    }
    std::vector<int> ui = tq;
    ui.insert(ui.end(), p.begin() + m, p.end());
    FUSEC_ASSIGN_OR_RETURN(upd, valueAt(n.input(2), ui));
  } else {
    // Update position q = p with q[axis] = u; it exists where p's other
    // coordinates lie inside updates' shape, and lands on p when
    // indices[q] (normalised) equals p[axis].
    std::vector<int> q = p;
    q[axis] = u;
    int inside = spec_.constB(true);
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && us[d] < s[d])
        inside = bin(BinaryOp::kAnd, inside, bin(BinaryOp::kLt, p[d], spec_.constI(us[d])));
    FUSEC_ASSIGN_OR_RETURN(int idx, guardedAt(n.input(1), q, inside));
    match = bin(BinaryOp::kAnd, inside,
                bin(BinaryOp::kEq, normalized(idx, s[axis]), spec_.cast(p[axis], ScalarType::kI64)));
    FUSEC_ASSIGN_OR_RETURN(upd, guardedAt(n.input(2), q, inside));
  }
  upd = spec_.cast(upd, t);
  auto reduce = [&](ReduceKind k, int body) { return spec_.reduceResult(spec_.addReduction(k, body)); };
  const double inf = std::numeric_limits<double>::infinity();
  int v;
  if (red == "add") {
    v = bin(BinaryOp::kAdd, data, reduce(ReduceKind::kSum, spec_.select(match, upd, c(0, t))));
  } else if (red == "mul") {
    v = bin(BinaryOp::kMul, data, reduce(ReduceKind::kProd, spec_.select(match, upd, c(1, t))));
  } else if (red == "max" || red == "min") {
    const bool mx = red == "max";
    const int none = isFloatCompute(t) ? spec_.constF(mx ? -inf : inf, t)
                                       : spec_.constI(mx ? std::numeric_limits<int64_t>::min()
                                                         : std::numeric_limits<int64_t>::max(), t);
    const int r = reduce(mx ? ReduceKind::kMax : ReduceKind::kMin, spec_.select(match, upd, none));
    const int any = reduce(ReduceKind::kMax, spec_.select(match, spec_.constI(1, ScalarType::kI64),
                                                          spec_.constI(0, ScalarType::kI64)));
    v = spec_.select(bin(BinaryOp::kGt, any, spec_.constI(0, ScalarType::kI64)),
                     bin(mx ? BinaryOp::kMax : BinaryOp::kMin, data, r), data);
  } else {
    // none: the matching update at the highest position wins.
    const int ul = spec_.cast(u, ScalarType::kI64);
    const int last = reduce(ReduceKind::kMax, spec_.select(match, ul, spec_.constI(-1, ScalarType::kI64)));
    const int val = reduce(ReduceKind::kSum,
                           spec_.select(bin(BinaryOp::kAnd, match, bin(BinaryOp::kEq, ul, last)), upd, c(0, t)));
    v = spec_.select(bin(BinaryOp::kGe, last, spec_.constI(0, ScalarType::kI64)), val, data);
  }
  spec_.addStore(out, p, spec_.cast(v, st));
  return absl::OkStatus();
}

}  // namespace fusec::program::lowering
