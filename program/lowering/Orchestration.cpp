//===- Orchestration.cpp - Groups, domain setup, lowerGraph ------------===//
//
// Each op's semantics are written in the scalar language of KernelSpec by
// valueAt(v, idx): "the expression for tensor v at indices idx", built
// recursively through the group's members (consumer-driven, so broadcasts,
// transposes, slices and gathers become index arithmetic) and ending in
// Loads of the group's inputs. Expressions are hash-consed, so each member
// result is computed once per point.
//
// Reductions (Softmax, LogSoftmax, LayerNormalization, RMSNormalization,
// Reduce*, ArgMax/ArgMin, pooling windows, the K loop of a fallback MatMul)
// share one domain per kernel: parallel dims = the kept dims of the first
// reduction (the anchor), reduced dims = its reduced dims. Another reduction
// joins only if it reduces the same rows (checked structurally: its row
// index expression must equal the domain's).
//
// Semantics follow the ONNX operator pages (opset 13+ forms; the importer
// upgrades older ones).
//
//===----------------------------------------------------------------------===//
#include "program/lowering/GroupLowering.h"
#include "program/Legality.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_join.h"

namespace fusec::program {

using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::Value;

GemmEpilogue GemmEpilogue::identity(int64_t m, int64_t n) {
  GemmEpilogue e;
  e.spec.addDim(m, false);
  e.spec.addDim(n, false);
  e.spec.addBuffer(DType::kF32, {m, n}, false);
  return e;
}

int GemmEpilogue::accumulator() {
  return spec.load(0, {spec.index(0), spec.index(1)});
}

int GemmEpilogue::addBias(DType dtype) {
  const int b = hasBias() ? 1 : spec.addBuffer(dtype, {spec.dims[1].extent}, false);
  bias = true;
  return spec.load(b, {spec.index(1)});
}

int buildRelu(KernelSpec &spec, int x) {
  return spec.binary(BinaryOp::kMax, x, spec.constF(0.0));
}

int buildGeluTanh(KernelSpec &spec, int x) {
  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
  const int x3 = spec.binary(BinaryOp::kMul, spec.binary(BinaryOp::kMul, x, x), x);
  const int inner = spec.binary(BinaryOp::kAdd, x, spec.binary(BinaryOp::kMul, spec.constF(0.044715), x3));
  const int t = spec.unary(UnaryOp::kTanh, spec.binary(BinaryOp::kMul, spec.constF(0.7978845608028654), inner));
  const int half = spec.binary(BinaryOp::kMul, spec.constF(0.5), x);
  return spec.binary(BinaryOp::kMul, half, spec.binary(BinaryOp::kAdd, spec.constF(1.0), t));
}

bool isViewNode(const Node &node) {
  switch (node.kind()) {
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
    case OpKind::kFlatten:
    case OpKind::kIdentity:
      return true;
    case OpKind::kDropout:
      return node.numOutputs() < 2 || node.output(1) == nullptr;
    case OpKind::kAbs: case OpKind::kNeg: case OpKind::kExp: case OpKind::kLog: case OpKind::kSqrt:
    case OpKind::kReciprocal: case OpKind::kErf: case OpKind::kTanh: case OpKind::kSigmoid:
    case OpKind::kRelu: case OpKind::kLeakyRelu: case OpKind::kElu: case OpKind::kHardSigmoid:
    case OpKind::kSoftplus: case OpKind::kSwish: case OpKind::kGelu: case OpKind::kSin: case OpKind::kCos:
    case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos: case OpKind::kAtan: case OpKind::kSinh:
    case OpKind::kCosh: case OpKind::kAsinh: case OpKind::kAcosh: case OpKind::kAtanh:
    case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound: case OpKind::kSign:
    case OpKind::kNot: case OpKind::kIsNaN: case OpKind::kIsInf: case OpKind::kCast:
    case OpKind::kClip: case OpKind::kAdd: case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv:
    case OpKind::kPow: case OpKind::kMod: case OpKind::kMax: case OpKind::kMin: case OpKind::kSum:
    case OpKind::kMean: case OpKind::kEqual: case OpKind::kLess: case OpKind::kLessOrEqual:
    case OpKind::kGreater: case OpKind::kGreaterOrEqual: case OpKind::kAnd: case OpKind::kOr:
    case OpKind::kXor: case OpKind::kWhere: case OpKind::kMatMul: case OpKind::kGemm:
    case OpKind::kConv: case OpKind::kSoftmax: case OpKind::kLogSoftmax:
    case OpKind::kLayerNormalization: case OpKind::kRMSNormalization:
    case OpKind::kBatchNormalization: case OpKind::kReduceMean: case OpKind::kReduceSum:
    case OpKind::kReduceMax: case OpKind::kReduceMin: case OpKind::kReduceProd:
    case OpKind::kReduceSumSquare: case OpKind::kReduceL2: case OpKind::kArgMax:
    case OpKind::kArgMin: case OpKind::kMaxPool: case OpKind::kAveragePool:
    case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool: case OpKind::kTranspose:
    case OpKind::kConcat: case OpKind::kSplit: case OpKind::kSlice: case OpKind::kGather:
    case OpKind::kGatherElements: case OpKind::kGatherND: case OpKind::kExpand: case OpKind::kTile:
    case OpKind::kTrilu: case OpKind::kPad: case OpKind::kShape: case OpKind::kSize:
    case OpKind::kConstantOfShape: case OpKind::kRange: case OpKind::kConstant:
    case OpKind::kFusedAttention: case OpKind::kUnregistered:
    case OpKind::kPRelu: case OpKind::kConvTranspose: case OpKind::kCumSum: case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kCumProd: case OpKind::kCompress: case OpKind::kBitCast: case OpKind::kCol2Im: case OpKind::kUnique: case OpKind::kTensorScatter: case OpKind::kNonMaxSuppression: case OpKind::kDet: case OpKind::kResize:
    case OpKind::kTopK: case OpKind::kHardmax: case OpKind::kOneHot: case OpKind::kScatterND:
    case OpKind::kScatterElements: case OpKind::kBitShift: case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear:
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
      return false;
  }
  return false;  // an OpKind out of range
}


namespace lowering {

/// The longest axis a CumSum kernel scans: each output element sums its
/// prefix (len^2 / 2 adds per scanned row rather than len), which is cheap
/// for the lengths exporters scan (attention masks, position ids: the
/// sequence length) and not for long ones.
constexpr int64_t kMaxCumSumLength = 16384;

absl::Status GroupLowering::lowerCumSum(const Node &n) {
  // A scan as a row reduction: parallel dims = y's dims, one reduced dim j
  // over the scanned axis, y[.., i, ..] = sum_j (j in the prefix of i) x[.., j, ..].
  // The row is the scanned axis whichever axis it is (the load of x puts j
  // there), so the last axis and the others lower alike.
  FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(n.input(0)));
  auto av = constInts(n.input(1));
  if (!av || av->size() != 1)
    return unimplemented(n, absl::StrCat("the axis (input 1) is not a constant; fusec compiles ",
                                         ir::opInfo(n.kind()).name, " along an axis known at compile time"));
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t axis = (*av)[0];
  if (axis < -rank || axis >= rank) return unimplemented(n, "axis out of range");
  if (axis < 0) axis += rank;
  const int64_t len = s[axis];
  if (len > kMaxCumSumLength)
    return unimplemented(n, absl::StrCat("a scan along an axis of ", len,
                                         " elements: the scan kernel reduces each prefix (O(n^2)) "
                                         "and is limited to ", kMaxCumSumLength));
  if (prod(s) == 0) return absl::OkStatus();  // nothing to store
  domainShape_ = s;
  domainShape_.push_back(len);
  for (int64_t e : s) domainIdx_.push_back(spec_.index(spec_.addDim(e, false)));
  numParallel_ = s.size();
  const int j = spec_.index(spec_.addDim(len, true));
  domainIdx_.push_back(j);
  spec_.kind = SpecKind::kReduce;
  const int i = domainIdx_[axis];
  const bool exclusive = n.attrI("exclusive") != 0, reverse = n.attrI("reverse") != 0;
  const BinaryOp cmp = reverse ? (exclusive ? BinaryOp::kGt : BinaryOp::kGe)
                               : (exclusive ? BinaryOp::kLt : BinaryOp::kLe);
  std::vector<int> sub(domainIdx_.begin(), domainIdx_.begin() + numParallel_);
  sub[axis] = j;
  FUSEC_ASSIGN_OR_RETURN(int x, valueAt(n.input(0), sub));
  const ScalarType t = typeOf(x);
  // CumProd: the same prefix, multiplied (elements outside it read 1).
  const bool product = n.kind() == OpKind::kCumProd;
  const int sum = spec_.reduceResult(spec_.addReduction(
      product ? ReduceKind::kProd : ReduceKind::kSum, spec_.select(bin(cmp, j, i), x, c(product ? 1 : 0, t))));
  std::vector<int> oi(domainIdx_.begin(), domainIdx_.begin() + numParallel_);
  spec_.addStore(bufferFor(n.output(0), true), oi,
                 spec_.cast(sum, computeTypeOf(n.output(0)->type().dtype)));
  return absl::OkStatus();
}

/// The largest matrix a Det kernel expands: the determinant is the sum over
/// the M! permutations of signed products of M loads (24 terms at M = 4,
/// 120 at 5), written out in f64.
constexpr int64_t kMaxDetSize = 5;

absl::Status GroupLowering::lowerDet(const Node &n) {
  FUSEC_ASSIGN_OR_RETURN(Shape xs, staticShape(n.input(0)));
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (rank < 2) return unimplemented(n, "Det needs [*, M, M]");
  const int64_t m = xs[rank - 1];
  if (m > kMaxDetSize)
    return unimplemented(n, absl::StrCat("a ", m, " x ", m, " determinant: the Det kernel expands the "
                                         "permutations and is limited to ", kMaxDetSize, " x ", kMaxDetSize));
  Shape os(xs.begin(), xs.end() - 2);
  if (prod(os) == 0) return absl::OkStatus();
  domainShape_ = os;
  for (int64_t e : os) domainIdx_.push_back(spec_.index(spec_.addDim(e, false)));
  numParallel_ = os.size();
  const ScalarType f64 = ScalarType::kF64;
  std::vector<std::vector<int>> a(static_cast<size_t>(m), std::vector<int>(static_cast<size_t>(m)));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t q = 0; q < m; ++q) {
      std::vector<int> sub = domainIdx_;
      sub.push_back(spec_.constI(r));
      sub.push_back(spec_.constI(q));
      FUSEC_ASSIGN_OR_RETURN(int v, valueAt(n.input(0), sub));
      a[r][q] = spec_.cast(v, f64);
    }
  }
  // Sum over permutations p of sign(p) * prod_r a[r][p[r]] (M = 0: 1).
  std::vector<int64_t> p(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) p[r] = r;
  int acc = -1;
  do {
    int inversions = 0;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t q = r + 1; q < m; ++q) inversions += p[r] > p[q];
    int term = -1;
    for (int64_t r = 0; r < m; ++r) term = term < 0 ? a[r][p[r]] : bin(BinaryOp::kMul, term, a[r][p[r]]);
    if (term < 0) term = spec_.constF(1, f64);
    if (acc < 0) acc = inversions % 2 ? un(UnaryOp::kNeg, term) : term;
    else acc = bin(inversions % 2 ? BinaryOp::kSub : BinaryOp::kAdd, acc, term);
  } while (std::next_permutation(p.begin(), p.end()));
  spec_.addStore(bufferFor(n.output(0), true), domainIdx_,
                 spec_.cast(acc, computeTypeOf(n.output(0)->type().dtype)));
  return absl::OkStatus();
}

absl::Status GroupLowering::setupDomain(const std::vector<const Value *> &outputs) {
  const Node *anchor = nullptr;
  for (const Node *n : order_) {
    if (isRowReductionOp(n->kind()) || n->kind() == OpKind::kMaxPool ||
        n->kind() == OpKind::kAveragePool || n->kind() == OpKind::kMatMul ||
        n->kind() == OpKind::kGemm || n->kind() == OpKind::kConvTranspose) {
      if (external_.count(n->output(0))) continue;
      if (isRowReductionOp(n->kind())) {
        FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(n->input(0)));
        FUSEC_ASSIGN_OR_RETURN(ReduceAxes ra, reductionAxes(*n, static_cast<int64_t>(s.size())));
        if (ra.axes.empty()) continue;
      }
      anchor = n;
      break;
    }
  }
  if (anchor) return setupReductionDomain(*anchor);
  // Pointwise: the largest output.
  bool first = true;
  for (const Value *v : outputs) {
    FUSEC_ASSIGN_OR_RETURN(Shape s, staticShape(v));
    if (first || prod(s) > prod(domainShape_)) domainShape_ = s;
    first = false;
  }
  domainIdx_.clear();
  for (int64_t e : domainShape_) domainIdx_.push_back(spec_.index(spec_.addDim(e, false)));
  numParallel_ = domainShape_.size();
  return absl::OkStatus();
}

absl::StatusOr<WorkItem> GroupLowering::run(const std::set<const Value *> &external) {
  external_ = external;
  // Outputs: member results read outside the group (through views) or graph outputs.
  std::vector<const Value *> outputs;
  std::function<bool(const Value *)> usedOutside = [&](const Value *v) -> bool {
    if (graph_.isGraphOutput(v)) return true;
    auto it = users_.find(v);
    if (it == users_.end()) return false;
    for (const Node *u : it->second) {
      if (members_.count(u)) continue;
      if (isViewNode(*u) && u->input(0) == v) {
        if (usedOutside(u->output(0))) return true;
        continue;
      }
      return true;
    }
    return false;
  };
  for (const Node *n : order_) {
    if (isViewNode(*n)) continue;
    for (const Value *o : n->outputs())
      if (o && !external_.count(o) && usedOutside(o)) outputs.push_back(o);
  }
  WorkItem item;
  item.kind = WorkItem::Kind::kKernel;
  item.nodes = order_;
  if (outputs.empty()) return item;  // dead group: nothing to store

  // Split: one domain over the input, each output stored where it lies.
  if (order_.size() == 1 && order_[0]->kind() == OpKind::kSplit) {
    const Node &n = *order_[0];
    FUSEC_ASSIGN_OR_RETURN(Shape is, staticShape(n.input(0)));
    const int64_t axis = n.getInt("axis", 0) < 0 ? n.getInt("axis", 0) + static_cast<int64_t>(is.size())
                                                 : n.getInt("axis", 0);
    domainShape_ = is;
    for (int64_t e : is) domainIdx_.push_back(spec_.index(spec_.addDim(e, false)));
    numParallel_ = is.size();
    FUSEC_ASSIGN_OR_RETURN(int x, valueAt(n.input(0), domainIdx_));
    int64_t off = 0;
    for (const Value *o : n.outputs()) {
      FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(o));
      const int64_t len = os[axis];
      if (std::count(outputs.begin(), outputs.end(), o) && len > 0) {
        std::vector<int> oi = domainIdx_;
        oi[axis] = bin(BinaryOp::kSub, domainIdx_[axis], spec_.constI(off));
        int g = bin(BinaryOp::kAnd, bin(BinaryOp::kGe, domainIdx_[axis], spec_.constI(off)),
                    bin(BinaryOp::kLt, domainIdx_[axis], spec_.constI(off + len)));
        spec_.addStore(bufferFor(o, true), oi, x, g);
      }
      off += len;
    }
    item.spec = std::move(spec_);
    item.buffers = bufferValues_;
    return item;
  }

  // Ops whose result size depends on the data have no kernel.
  for (const Node *n : order_) {
    if (n->kind() == OpKind::kCompress)
      return unimplemented(*n, "the condition (input 1) arrives at run time, so the result's size "
                               "depends on the data; fusec compiles Compress with a constant condition "
                               "(written as a Gather at import)");
    if (n->kind() == OpKind::kUnique)
      return unimplemented(*n, "the number of distinct items depends on the data (results of shape "
                               "[num_unique, ...]); fusec compiles only static result shapes (the "
                               "reference interpreter runs it)");
    if (n->kind() == OpKind::kBitCast)
      return unimplemented(*n, "the kernel language has no bit-reinterpreting scalar op (the reference "
                               "interpreter runs BitCast)");
    if (n->kind() == OpKind::kCol2Im) {
      const bool constShapes = n->input(1) && n->input(1)->isConstant() && n->input(2) && n->input(2)->isConstant();
      return unimplemented(*n, constShapes ? "Col2Im has no kernel yet (the reference interpreter runs it)"
                                           : "image_shape / block_shape (inputs 1, 2) arrive at run time, so the "
                                             "result's shape is not known at compile time; fusec has no Col2Im "
                                             "kernel either (the reference interpreter runs it)");
    }
    if (n->kind() == OpKind::kTensorScatter)
      return unimplemented(*n, "TensorScatter has no kernel yet (the reference interpreter runs it)");
    if (n->kind() == OpKind::kNonMaxSuppression)
      return unimplemented(*n, "the number of selected boxes depends on the data (a result of shape "
                               "[num_selected, 3]); fusec compiles only static result shapes (the "
                               "reference interpreter runs it)");
  }
  if (order_.size() == 1 && order_[0]->kind() == OpKind::kRoiAlign) {
    FUSEC_RETURN_IF_ERROR(lowerRoiAlign(*order_[0]));
    item.spec = std::move(spec_);
    item.buffers = bufferValues_;
    return item;
  }
  if (order_.size() == 1 && order_[0]->kind() == OpKind::kDet) {
    FUSEC_RETURN_IF_ERROR(lowerDet(*order_[0]));
    item.spec = std::move(spec_);
    item.buffers = bufferValues_;
    return item;
  }
  if (order_.size() == 1 && (order_[0]->kind() == OpKind::kCumSum || order_[0]->kind() == OpKind::kCumProd)) {
    FUSEC_RETURN_IF_ERROR(lowerCumSum(*order_[0]));
    item.spec = std::move(spec_);
    item.buffers = bufferValues_;
    return item;
  }
  if (order_.size() == 1 && order_[0]->kind() == OpKind::kTopK) {
    FUSEC_RETURN_IF_ERROR(lowerTopK(*order_[0], outputs));
    item.spec = std::move(spec_);
    item.buffers = bufferValues_;
    return item;
  }
  if (order_.size() == 1 && (order_[0]->kind() == OpKind::kScatterND ||
                             order_[0]->kind() == OpKind::kScatterElements)) {
    FUSEC_RETURN_IF_ERROR(lowerScatter(*order_[0]));
    item.spec = std::move(spec_);
    item.buffers = bufferValues_;
    return item;
  }

  FUSEC_RETURN_IF_ERROR(setupDomain(outputs));
  Shape dpar(domainShape_.begin(), domainShape_.begin() + numParallel_);
  std::vector<int> dparIdx(domainIdx_.begin(), domainIdx_.begin() + numParallel_);
  const int64_t rowSize = prod(domainShape_, numParallel_);
  for (const Value *o : outputs) {
    FUSEC_ASSIGN_OR_RETURN(Shape os, staticShape(o));
    const int64_t on = prod(os);
    // No elements, nothing to store (e.g. a Softmax over an empty axis,
    // whose output fits no row domain; red team, stop 33).
    if (on == 0) continue;
    std::vector<int> oi;
    int guard = -1;
    if (anchor_ && on == prod(dpar) * rowSize && rowSize > 1) {
      // Element-level: the full domain.
      oi = reshapeIndex(anchorIdx_, anchorShape_, os);
    } else if (on == prod(dpar)) {
      oi = reshapeIndex(dparIdx, dpar, os);
    } else if (os.size() <= dpar.size()) {
      // Broadcast-compatible with the parallel domain: store where the dropped dims are 0.
      const size_t off = dpar.size() - os.size();
      guard = spec_.constB(true);
      for (size_t d = 0; d < dpar.size(); ++d) {
        if (d >= off && os[d - off] == dpar[d]) {
          oi.push_back(dparIdx[d]);
        } else if (d >= off && os[d - off] == 1) {
          oi.push_back(spec_.constI(0));
          guard = bin(BinaryOp::kAnd, guard, bin(BinaryOp::kEq, dparIdx[d], spec_.constI(0)));
        } else if (d < off) {
          guard = bin(BinaryOp::kAnd, guard, bin(BinaryOp::kEq, dparIdx[d], spec_.constI(0)));
        } else {
          return unimplemented(*o->producer(), absl::StrCat("output '", o->name(), "' of shape ",
                                                            o->type().str(),
                                                            " does not fit the kernel's domain"));
        }
      }
    } else {
      return unimplemented(*o->producer(), absl::StrCat("output '", o->name(), "' of shape ",
                                                        o->type().str(),
                                                        " does not fit the kernel's domain"));
    }
    FUSEC_ASSIGN_OR_RETURN(int v, valueAt(o, oi));
    v = spec_.cast(v, computeTypeOf(o->type().dtype));
    spec_.addStore(bufferFor(o, true), oi, v, guard);
  }
  item.spec = std::move(spec_);
  item.buffers = bufferValues_;
  return item;
}


}  // namespace lowering

using namespace lowering;

namespace {

/// Calls \p reader(node) for each consumer of \p v that is not a view,
/// looking through views of it. False when \p v or a view of it is a graph
/// output, or as soon as \p reader returns false; else true.
template <typename Reader>
bool forEachReader(const ir::Graph &graph, const absl::flat_hash_map<const Value *, std::vector<Node *>> &users,
                   const Value *v, const Reader &reader) {
  std::vector<const Value *> work = {v};
  while (!work.empty()) {
    const Value *w = work.back();
    work.pop_back();
    if (graph.isGraphOutput(w)) return false;
    auto it = users.find(w);
    if (it == users.end()) continue;
    for (const Node *u : it->second) {
      if (isViewNode(*u) && u->input(0) == w) work.push_back(u->output(0));
      else if (!reader(u)) return false;
    }
  }
  return true;
}

/// True if \p v (or a view of it) is no graph output and has exactly one
/// consumer that is not a view (views looked through).
bool readOnceInside(const ir::Graph &graph,
                    const absl::flat_hash_map<const Value *, std::vector<Node *>> &users,
                    const Value *v) {
  size_t readers = 0;
  return forEachReader(graph, users, v, [&](const Node *) { return ++readers <= 1; }) && readers == 1;
}

/// True if \p v (or a view of it) is no graph output and every consumer
/// that is not a view is one of \p members.
bool readOnlyBy(const ir::Graph &graph, const absl::flat_hash_map<const Value *, std::vector<Node *>> &users,
                const Value *v, const std::vector<const Node *> &members) {
  return forEachReader(graph, users, v, [&](const Node *u) {
    return std::find(members.begin(), members.end(), u) != members.end();
  });
}

}  // namespace

namespace {
absl::StatusOr<std::vector<WorkItem>> lowerGroupUnguarded(
    const ir::Graph &graph, const std::string &name, const std::vector<const Node *> &members,
    const LoweringOptions &opts,
    const absl::flat_hash_map<const Value *, std::vector<Node *>> &users);
}  // namespace

// Every member must run under the same guard (ir::Guard; the fusion pass's
// canFuse never groups nodes of different guards, and the backend legality
// that asks this function refuses such a group too); the items inherit it.
absl::StatusOr<std::vector<WorkItem>> lowerGroup(
    const ir::Graph &graph, const std::string &name, const std::vector<const Node *> &members,
    const LoweringOptions &opts,
    const absl::flat_hash_map<const Value *, std::vector<Node *>> &users) {
  for (const Node *n : members)
    if (n->guard() != members.front()->guard())
      return unimplemented(*n, absl::StrCat("it runs ", ir::describeGuard(n->guard()), " but ",
                                            members.front()->describe(), " of the same kernel runs ",
                                            ir::describeGuard(members.front()->guard())));
  FUSEC_ASSIGN_OR_RETURN(std::vector<WorkItem> items,
                         lowerGroupUnguarded(graph, name, members, opts, users));
  if (!members.empty())
    for (WorkItem &w : items) w.guard = members.front()->guard();
  return items;
}

namespace {
absl::StatusOr<std::vector<WorkItem>> lowerGroupUnguarded(
    const ir::Graph &graph, const std::string &name, const std::vector<const Node *> &members,
    const LoweringOptions &opts,
    const absl::flat_hash_map<const Value *, std::vector<Node *>> &users) {
  std::vector<WorkItem> items;
  // Narrow dtypes (ir/DType.h): the four float8 formats are stored one byte
  // per element and computed in f32 (loads decode, stores encode; Cast and
  // QuantizeLinear round with UnaryOp::kRoundF8*). f8e8m0, float4 and the
  // packed 4- and 2-bit integers have no scalar conversions in the kernel
  // language yet: refused, naming the node and the dtype, rather than
  // computed as some other dtype.
  for (const Node *n : members) {
    for (int i = 0; i < n->numInputs() + n->numOutputs(); ++i) {
      const Value *v = i < n->numInputs() ? n->input(i) : n->output(i - n->numInputs());
      if (v && ir::isNarrow(v->type().dtype) && !isKernelFloat8(v->type().dtype))
        return unimplemented(*n, absl::StrCat("value '", v->name(), "' has dtype ",
                                              ir::dtypeName(v->type().dtype),
                                              ", which kernels do not support (f8e8m0, float4, int4 "
                                              "and int2 run in the reference interpreter only)"));
    }
  }
  // FusedAttention with the layout ops folded into its operand strides.
  if (members.size() > 1 && std::any_of(members.begin(), members.end(), [](const Node *n) {
        return n->kind() == OpKind::kFusedAttention;
      })) {
    const std::vector<const Value *> outs(graph.outputs().begin(), graph.outputs().end());
    return lowering::lowerAttentionGroup(name, members, opts, users, outs);
  }
  // FusedAttention (its own kernel kind): an attention spec.
  if (members.size() == 1 && members[0]->kind() == OpKind::kFusedAttention) {
    const Node *att = members[0];
    WorkItem it;
    it.kind = WorkItem::Kind::kKernel;
    it.name = name;
    it.nodes = members;
    FUSEC_ASSIGN_OR_RETURN(it.spec.attention, attentionSpecFor(*att));
    it.spec.kind = SpecKind::kAttention;
    for (int i = 0; i < att->numInputs(); ++i) {
      it.spec.addBuffer(att->input(i)->type().dtype, att->input(i)->type().staticShape(), false);
      it.buffers.push_back(att->input(i));
    }
    it.spec.addBuffer(att->output(0)->type().dtype, att->output(0)->type().staticShape(), true);
    it.buffers.push_back(att->output(0));
    items.push_back(std::move(it));
    return items;
  }
  // Library calls: the first contraction of the group.
  const Node *contraction = nullptr;
  for (const Node *n : members)
    if (n->kind() == OpKind::kMatMul || n->kind() == OpKind::kGemm || n->kind() == OpKind::kConv) {
      contraction = n;
      break;
    }
  std::set<const Value *> external;
  if (contraction) {
    std::vector<const Node *> rest;
    for (const Node *n : members)
      if (n != contraction) rest.push_back(n);
    WorkItem lib;
    lib.name = name;
    lib.nodes = members;
    if (contraction->kind() == OpKind::kConv) {
      FUSEC_ASSIGN_OR_RETURN(lib.conv, convFor(*contraction));
      lib.kind = WorkItem::Kind::kConv;
      items.push_back(lib);
      if (rest.empty()) return items;
      external.insert(contraction->output(0));
    } else if (auto g = gemmFor(*contraction, opts.allowTf32)) {
      lib.kind = WorkItem::Kind::kGemm;
      lib.gemm = *g;
      GemmParams fused = *g;
      const Value *final = matchGemmEpilogue(*contraction, rest, fused, opts);
      bool finalOk = final != nullptr;
      if (finalOk && !rest.empty()) {
        // Intermediate results of the chain (the GEMM's own among them)
        // are never stored: each must have its one consumer in the chain.
        std::vector<const Value *> chain = {contraction->output(0)};
        for (const Node *n : rest)
          for (const Value *o : n->outputs()) chain.push_back(o);
        for (const Value *o : chain)
          if (o && o != final && !readOnceInside(graph, users, o)) finalOk = false;
      }
      if (finalOk) {
        fused.d = final;
        lib.gemm = fused;
        items.push_back(lib);
        return items;
      }
      items.push_back(lib);
      if (rest.empty()) return items;
      external.insert(contraction->output(0));
    }
    // else: generated kernel with the contraction as its K reduction.
  }
  GroupLowering gl(graph, members, opts, users);
  auto item = gl.run(external);
  if (!item.ok())
    return name.empty() ? item.status() : withContext(item.status(), absl::StrCat("kernel ", name));
  item->name = name;
  if (opts.generatedGemmEpilogue && contraction && !items.empty() && items.back().kind == WorkItem::Kind::kGemm) {
    GemmParams folded = items.back().gemm;
    if (foldIntoGemmEpilogue(*item, contraction->output(0), folded)) {
      items.back().gemm = folded;
      return items;
    }
  }
  // The convolution's result must then be read by this kernel only: it is
  // no longer stored.
  if (opts.generatedConvEpilogue && contraction && !items.empty() && items.back().kind == WorkItem::Kind::kConv &&
      readOnlyBy(graph, users, contraction->output(0), members)) {
    ConvParams folded = items.back().conv;
    if (foldIntoConvEpilogue(*item, contraction->output(0), folded)) {
      items.back().conv = std::move(folded);
      return items;
    }
  }
  if (!item->spec.stores.empty()) items.push_back(std::move(*item));
  return items;
}
}  // namespace

absl::StatusOr<std::vector<WorkItem>> lowerGraph(const ir::Graph &graph,
                                                 const std::vector<std::string> &kernelNames,
                                                 const LoweringOptions &opts) {
  const std::vector<Node *> nodes = graph.nodes();
  absl::flat_hash_map<const Node *, int> topo;
  for (size_t i = 0; i < nodes.size(); ++i) topo[nodes[i]] = static_cast<int>(i);
  const auto users = graph.userMap();

  // Groups by kernel name; ungrouped non-view nodes form their own groups.
  std::map<std::string, int> groupIndex;
  std::vector<std::string> names;
  std::vector<std::vector<const Node *>> groups;
  for (const std::string &k : kernelNames) {
    groupIndex[k] = static_cast<int>(groups.size());
    names.push_back(k);
    groups.emplace_back();
  }
  for (const Node *n : nodes) {
    const ir::Attribute *a = n->attr(kKernelAttr);
    std::string name;
    if (a && a->kind() == ir::Attribute::Kind::kString) {
      name = a->s();
    } else {
      if (isViewNode(*n)) continue;
      if (n->kind() == OpKind::kConstant) continue;
      name = absl::StrCat("u", groups.size(), "_", n->opType());
    }
    auto it = groupIndex.find(name);
    if (it == groupIndex.end()) {
      it = groupIndex.emplace(name, static_cast<int>(groups.size())).first;
      names.push_back(name);
      groups.emplace_back();
    }
    groups[it->second].push_back(n);
  }

  // Kernel dependencies (through views), then a stable topological order.
  absl::flat_hash_map<const Node *, int> groupOfNode;
  for (size_t gi = 0; gi < groups.size(); ++gi)
    for (const Node *n : groups[gi]) groupOfNode[n] = static_cast<int>(gi);
  std::vector<std::set<int>> deps(groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (const Node *n : groups[gi]) {
      std::vector<const Value *> read(n->inputs().begin(), n->inputs().end());
      for (const ir::GuardTerm &t : n->guard()) read.push_back(t.cond);  // read before it runs
      for (const Value *in : read) {
        const Value *v = in;
        while (v && v->producer() && isViewNode(*v->producer()) && !groupOfNode.count(v->producer()))
          v = v->producer()->input(0);
        if (!v || !v->producer()) continue;
        auto it = groupOfNode.find(v->producer());
        if (it != groupOfNode.end() && it->second != static_cast<int>(gi)) deps[gi].insert(it->second);
      }
    }
  }
  // Depth-first post-order from an explicit stack (a chain of thousands
  // of kernels is as deep).
  std::vector<int> order;
  std::vector<int> state(groups.size(), 0);  // 0 new, 1 on the stack, 2 ordered
  for (size_t root = 0; root < groups.size(); ++root) {
    if (state[root]) continue;
    std::vector<std::pair<int, std::set<int>::const_iterator>> stack;
    stack.push_back({static_cast<int>(root), deps[root].begin()});
    state[root] = 1;
    while (!stack.empty()) {
      auto &[g, next] = stack.back();
      if (next == deps[g].end()) {
        state[g] = 2;
        order.push_back(g);
        stack.pop_back();
        continue;
      }
      const int d = *next++;
      if (state[d] == 1)
        return absl::InternalError(absl::StrCat("codegen: kernels form a cycle at '", names[d], "'"));
      if (state[d] == 0) {
        state[d] = 1;
        stack.push_back({d, deps[d].begin()});
      }
    }
  }

  std::vector<WorkItem> items;
  for (int gi : order) {
    std::vector<const Node *> members = groups[gi];
    if (members.empty()) continue;
    std::sort(members.begin(), members.end(),
              [&](const Node *a, const Node *b) { return topo.at(a) < topo.at(b); });
    const std::string &name = names[gi];
    FUSEC_ASSIGN_OR_RETURN(std::vector<WorkItem> groupItems,
                           lowerGroup(graph, name, members, opts, users));
    for (WorkItem &w : groupItems) items.push_back(std::move(w));
  }
  return items;
}

GraphIndex::GraphIndex(const ir::Graph &graph) : users(graph.userMap()) {
  const std::vector<Node *> nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) topo[nodes[i]] = static_cast<int>(i);
}

absl::StatusOr<std::vector<WorkItem>> lowerGroupItems(const ir::Graph &graph,
                                                      const std::vector<const Node *> &members,
                                                      const GraphIndex &index,
                                                      const LoweringOptions &opts) {
  std::vector<const Node *> sorted;
  for (const Node *n : members)
    if (!isViewNode(*n) && n->kind() != OpKind::kConstant) sorted.push_back(n);
  if (sorted.empty()) return std::vector<WorkItem>();
  std::sort(sorted.begin(), sorted.end(), [&](const Node *a, const Node *b) {
    return index.topo.at(a) < index.topo.at(b);
  });
  return lowerGroup(graph, "", sorted, opts, index.users);
}

absl::Status lowerableGroup(const ir::Graph &graph, const std::vector<const Node *> &members,
                            const GraphIndex &index) {
  return lowerGroupItems(graph, members, index).status();
}

GroupNote libraryEpilogueNote(const ir::Graph &graph, const std::vector<const Node *> &members,
                              const GraphIndex &index, const std::vector<WorkItem> &items) {
  GroupNote note;
  note.launches = static_cast<int>(items.size());
  for (size_t i = 0; i + 1 < items.size(); ++i) {
    const WorkItem &lib = items[i];
    if (items[i + 1].kind != WorkItem::Kind::kKernel) continue;
    const Value *result = lib.kind == WorkItem::Kind::kGemm ? lib.gemm.d
                          : lib.kind == WorkItem::Kind::kConv ? lib.conv.y
                                                              : nullptr;
    const std::optional<int64_t> n = result ? result->type().numElements() : std::nullopt;
    if (!n) continue;
    const double bytes = static_cast<double>(*n) * static_cast<double>(ir::dtypeSize(result->type().dtype));
    // Stored anyway when it (or a view of it) leaves the group: then only
    // the epilogue kernel's read is extra.
    note.extraBytes += readOnlyBy(graph, index.users, result, members) ? 2 * bytes : bytes;
  }
  return note;
}

}  // namespace fusec::program