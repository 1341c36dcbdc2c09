//===- ArithmeticIntensity.cpp - FLOPs, HBM bytes and roofline cost -------===//
//
// One switch over ir::OpKind (opRule) gives every op of ir/Ops.def its FLOP
// count and its read rule (a missing op does not compile); metadata-only
// operands (never read as data) come from the op table's Operands column
// (ir::isMetadataOperand). opCost, operandReadBytes and groupCost build on it.
// The counting conventions are documented in ArithmeticIntensity.h.
//
//===----------------------------------------------------------------------===//
#include "passes/cost/ArithmeticIntensity.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/container/flat_hash_set.h"

namespace fusec::passes {
namespace {

using ir::OpKind;

/// Elements of \p v's type, or 0 if absent or not static.
double elems(const ir::Value *v) {
  if (!v || !v->type().isStatic()) return 0;
  return static_cast<double>(v->type().numElements().value_or(0));
}

bool isStatic(const ir::Value *v) { return v && v->type().isStatic(); }

double valueBytes(const ir::Value *v) {
  return elems(v) * static_cast<double>(ir::dtypeSize(v->type().dtype));
}

/// Static extent of dimension \p d of \p v (negative counts from the end);
/// 1 if absent, out of range or not static.
double dim(const ir::Value *v, int64_t d) {
  if (!isStatic(v)) return 1;
  const auto &shape = v->type().shape;
  int64_t r = static_cast<int64_t>(shape.size());
  if (d < 0) d += r;
  if (d < 0 || d >= r) return 1;
  return static_cast<double>(shape[d].value);
}

/// Product of the static dims [from, rank) of \p v.
double dimProduct(const ir::Value *v, int64_t from) {
  double p = 1;
  if (!isStatic(v)) return p;
  for (int64_t d = from; d < v->type().rank(); ++d) p *= dim(v, d);
  return p;
}

int presentInputs(const ir::Node &n, int from = 0) {
  int c = 0;
  for (int i = from; i < n.numInputs(); ++i) c += n.input(i) != nullptr;
  return c;
}

/// How one op is costed.
struct OpRule {
  double flops = 0;
  bool partialData = false;       ///< operand 0 read only where used (gathers, slices)
  bool readsNoData = false;       ///< reads no input data (Shape, Size)
  bool contraction = false;
};

/// The per-op hook: FLOPs (valid when the types are static) and read rule.
/// Every row of ir/Ops.def has a case; the compiler checks this (-Wswitch).
OpRule opRule(const ir::Node &n) {
  OpRule r;
  const ir::Value *x = n.input(0);
  const ir::Value *y = n.numOutputs() > 0 ? n.output(0) : nullptr;
  const double in = elems(x), out = elems(y);
  switch (n.kind()) {
    // Unary elementwise: 1 per element; transcendentals kTranscendentalFlops.
    case OpKind::kAbs:
    case OpKind::kNeg:
    case OpKind::kRelu:
    case OpKind::kFloor:
    case OpKind::kCeil:
    case OpKind::kRound:
    case OpKind::kSign:
    case OpKind::kNot:
    case OpKind::kIsNaN:
    case OpKind::kIsInf:
    case OpKind::kReciprocal:
      r.flops = out;
      break;
    case OpKind::kExp:
    case OpKind::kLog:
    case OpKind::kSqrt:
    case OpKind::kErf:
    case OpKind::kTanh:
    case OpKind::kSin:
    case OpKind::kCos:
    case OpKind::kTan:
    case OpKind::kAsin:
    case OpKind::kAcos:
    case OpKind::kAtan:
    case OpKind::kSinh:
    case OpKind::kCosh:
    case OpKind::kAsinh:
    case OpKind::kAcosh:
    case OpKind::kAtanh:
      r.flops = kTranscendentalFlops * out;
      break;
    case OpKind::kSigmoid:   // exp, add, reciprocal
    case OpKind::kSoftplus:  // exp, add, log
    case OpKind::kElu:       // compare, exp, multiply-subtract
    case OpKind::kHardSigmoid:  // multiply-add, clamp (2 compares)
      r.flops = 3 * out;
      break;
    case OpKind::kSwish:  // (scale,) exp, add, reciprocal, multiply
      r.flops = (n.attrF("alpha") == 1.0f ? 4 : 5) * out;
      break;
    case OpKind::kDequantizeLinear:  // subtract the zero point, multiply by the scale
    case OpKind::kLeakyRelu:  // compare, multiply
    case OpKind::kPRelu:      // compare, multiply (slope broadcast to x)
      r.flops = 2 * out;
      break;
    case OpKind::kQuantizeLinear:  // divide, round, add the zero point, clamp (2 compares)
      r.flops = 5 * out;
      break;
    case OpKind::kGelu:  // erf form: scale, erf, add, 2 multiplies; tanh form: cubic + tanh
      r.flops = (n.attrS("approximate") == "tanh" ? 9 : 5) * out;
      break;
    case OpKind::kCast:
    case OpKind::kIdentity:
      r.flops = 0;
      break;
    case OpKind::kDropout:  // inference: a copy; ratio and training_mode are metadata
      break;
    case OpKind::kClip:  // one max and/or one min per element
      r.flops = presentInputs(n, 1) * out;
      break;

    // Binary / n-ary elementwise.
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kMod:
    case OpKind::kEqual:
    case OpKind::kLess:
    case OpKind::kLessOrEqual:
    case OpKind::kGreater:
    case OpKind::kGreaterOrEqual:
    case OpKind::kAnd:
    case OpKind::kOr:
    case OpKind::kXor:
    case OpKind::kWhere:
    case OpKind::kBitShift:
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
      r.flops = out;
      break;
    case OpKind::kMax:
    case OpKind::kMin:
    case OpKind::kSum:
      r.flops = std::max(0, presentInputs(n) - 1) * out;
      break;
    case OpKind::kMean:  // n-1 adds and one divide
      r.flops = presentInputs(n) * out;
      break;

    // Contractions.
    case OpKind::kMatMul:  // each output element is a K-long dot product
      r.flops = 2 * dim(x, -1) * out;
      r.contraction = true;
      break;
    case OpKind::kGemm: {
      double k = n.attrI("transA") ? dim(x, 0) : dim(x, 1);
      r.flops = 2 * k * out;
      if (n.attrF("alpha") != 1.0f) r.flops += out;
      if (n.input(2)) {
        r.flops += out;
        if (n.attrF("beta") != 1.0f) r.flops += out;
      }
      r.contraction = true;
      break;
    }
    case OpKind::kConv: {  // W is [Cout, Cin/group, k...]
      const ir::Value *w = n.input(1);
      r.flops = 2 * out * dimProduct(w, 1);
      if (n.input(2)) r.flops += out;
      r.contraction = true;
      break;
    }

    case OpKind::kFusedAttention: {  // Q·Kᵀ and P·V: 2·B·H·Sq·Sk·(D + Dv) = 4·B·H·Sq·Sk·D
      // out is [B,Hq,Sq,Dv]; the score matrix never touches memory, so the
      // bytes are Q + K + V + biases + out (the default read rule).
      const double dv = dim(y, -1), sk = dim(n.input(1), -2), d = dim(x, -1);
      r.flops = dv > 0 ? 2 * (out / dv) * sk * (d + dv) : 0;
      // Counted against the vector peak while the kernel is the naive one
      // (codegen/cuda/AttentionNaive.cpp, no tensor cores); the tiled
      // tensor-core kernel makes this a matrix-unit contraction.
      r.contraction = false;
      break;
    }

    // Normalisation and softmax.
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
      r.flops = 5 * in;
      break;
    case OpKind::kHardmax:  // the row's argmax (a compare per element), then a compare-select
      r.flops = 2 * in;
      break;
    case OpKind::kLayerNormalization:
      r.flops = 8 * in;
      break;
    case OpKind::kRMSNormalization:
      r.flops = 4 * in;
      break;
    case OpKind::kBatchNormalization:  // subtract mean, scale by rsqrt(var+eps), gamma, beta
      r.flops = 4 * in;
      break;

    // Reductions (axes are a metadata operand).
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kReduceProd:
      r.flops = in;
      break;
    case OpKind::kReduceMean:
      r.flops = in + out;
      break;
    case OpKind::kReduceSumSquare:
      r.flops = 2 * in;
      break;
    case OpKind::kReduceL2:
      r.flops = 2 * in + out;
      break;
    case OpKind::kArgMax:
    case OpKind::kArgMin:
      r.flops = in;
      break;
    case OpKind::kTopK: {
      // A selection: each of the k results is found by a pass over its row
      // (a compare for the value, one for the index), 2*k per input element
      // = 2 * len per output element; k is metadata. Both outputs count as
      // written.
      const int64_t rank = x && x->type().rankKnown ? x->type().rank() : 0;
      int64_t axis = n.attrI("axis");
      if (axis < 0) axis += rank;
      r.flops = rank > 0 && axis >= 0 && axis < rank ? 2 * dim(x, axis) * out : 0;
      break;
    }

    // Pooling.
    case OpKind::kMaxPool:
    case OpKind::kAveragePool: {
      double window = 1;
      for (int64_t k : n.getInts("kernel_shape")) window *= static_cast<double>(k);
      r.flops = window * out;
      if (n.kind() == OpKind::kAveragePool) r.flops += out;
      break;
    }
    case OpKind::kGlobalAveragePool:
      r.flops = in + out;
      break;
    case OpKind::kGlobalMaxPool:
      r.flops = in;
      break;

    // Layout / injective: data movement only.
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
    case OpKind::kExpand:
    case OpKind::kTile:
    case OpKind::kSplit:
    case OpKind::kTrilu:
      break;
    case OpKind::kTranspose:
    case OpKind::kFlatten:
    case OpKind::kConcat:
      break;
    case OpKind::kPad:  // pads and axes are parameters; constant_value is data
      break;
    case OpKind::kSlice:
      r.partialData = true;
      break;
    case OpKind::kGather:
    case OpKind::kGatherElements:
    case OpKind::kGatherND:
      r.partialData = true;
      break;
    case OpKind::kOneHot:  // index arithmetic (a compare-select of two values), as layout ops; depth is metadata
      break;
    case OpKind::kScatterND:
    case OpKind::kScatterElements:
      // reduction none: data movement; add/mul/max/min: one op per update element.
      r.flops = n.attrS("reduction") == "none" ? 0 : elems(n.input(2));
      break;

    // Shape and constant generators.
    case OpKind::kShape:
    case OpKind::kSize:
      r.readsNoData = true;
      break;
    case OpKind::kConstantOfShape:
      break;
    case OpKind::kRange:
    case OpKind::kConstant:
      break;

    case OpKind::kConvTranspose: {  // each X element meets M/group * prod(kernel) taps
      const ir::Value *w = n.input(1);
      r.flops = 2 * in * dim(w, 1) * dimProduct(w, 2);
      if (n.input(2)) r.flops += out;
      r.contraction = true;
      break;
    }

    // Scans and resampling.
    case OpKind::kCumSum:  // one add per element (axis is metadata)
    case OpKind::kCumProd:  // one multiply per element
      r.flops = in;
      break;
    case OpKind::kGridSample: {
      // A multiply-add per tap: 2^k (linear) or 4^k (cubic) taps over the k
      // spatial axes, nearest a gather; X is read only where the grid points.
      const std::string mode = n.attrS("mode");
      if (mode != "nearest" && x && x->type().rankKnown && x->type().rank() > 2) {
        double taps = 1;
        for (int64_t d = 2; d < x->type().rank(); ++d)
          taps *= (mode == "cubic" || mode == "bicubic") ? 4 : 2;
        r.flops = 2 * taps * out;
      }
      r.partialData = true;
      break;
    }
    case OpKind::kRoiAlign: {
      // Four taps (8 FLOPs) per bilinear sample; sampling_ratio^2 samples per
      // output element (2^2 assumed for the adaptive 0).
      const double s = n.attrI("sampling_ratio") > 0 ? static_cast<double>(n.attrI("sampling_ratio")) : 2.0;
      r.flops = 8 * s * s * out;
      r.partialData = true;
      break;
    }
    case OpKind::kBitCast:  // bytes reinterpreted: pure data movement
      break;
    case OpKind::kCol2Im:  // an add per input element (block entries outside the image dropped)
      r.flops = in;
      break;
    case OpKind::kUnique:  // a sort of the items: about log2(n) compares per element
      r.flops = in * std::max(1.0, std::log2(std::max(1.0, in)));
      break;
    case OpKind::kTensorScatter:  // a copy of the cache with update written in
      break;
    case OpKind::kCompress:  // data movement of the selected slices
      r.partialData = true;
      break;
    case OpKind::kNonMaxSuppression:  // an IoU (about 10 FLOPs) per pair of boxes per class
      r.flops = 10 * elems(n.input(1)) * dim(n.input(0), 1);
      break;
    case OpKind::kDet:  // LU: about 2/3 M^3 per matrix, M^2 elements each
      r.flops = in * dim(x, -1);
      break;
    case OpKind::kResize: {
      // A multiply-add per tap: 2^k taps (linear) or 4^k (cubic) over the k
      // resized axes; nearest is a gather (0). Antialias's wider footprint
      // on downscaled axes is not counted. roi/scales/sizes are metadata.
      const std::string mode = n.attrS("mode");
      if (mode != "nearest" && x && y && x->type().rankKnown && y->type().rankKnown &&
          x->type().rank() == y->type().rank()) {
        double taps = 1;
        for (int64_t d = 0; d < x->type().rank(); ++d)
          if (!(x->type().shape[d] == y->type().shape[d])) taps *= mode == "cubic" ? 4 : 2;
        r.flops = 2 * taps * out;
      }
      r.partialData = mode == "nearest";
      break;
    }

    case OpKind::kUnregistered:
      break;
  }
  return r;
}

/// operandReadBytes with the rule already computed.
double readBytes(const ir::Node &n, const OpRule &r, int i) {
  const ir::Value *v = n.input(i);
  if (!v || r.readsNoData) return 0;
  if (ir::isMetadataOperand(n.kind(), i)) return 0;  // ir/Ops.def's Operands column
  if (!isStatic(v)) return -1;
  double full = valueBytes(v);
  if (r.partialData && i == 0) {
    const ir::Value *y = n.output(0);
    if (!isStatic(y)) return -1;
    return std::min(full, elems(y) * static_cast<double>(ir::dtypeSize(v->type().dtype)));
  }
  return full;
}

/// Fills the target-dependent fields of \p c from flops, bytes, dtype and
/// hasContraction.
void applyRoofline(GroupCost &c, const TargetSpec &target) {
  double bw = target.memoryBandwidth;
  c.peakFlops = c.hasContraction ? target.matrixFlops(c.dtype) : target.vectorFlops(c.dtype);
  c.ridgePoint = bw > 0 ? c.peakFlops / bw : 0;
  c.arithmeticIntensity = c.bytes > 0 ? c.flops / c.bytes : 0;
  c.memoryBound = c.bytes > 0 ? c.arithmeticIntensity < c.ridgePoint : c.flops == 0;
  double memUs = bw > 0 ? c.bytes / bw * 1e6 : 0;
  double computeUs = c.peakFlops > 0 ? c.flops / c.peakFlops * 1e6 : 0;
  c.rooflineUs = std::max(memUs, computeUs);
}

/// The dtype whose peak rate applies to \p nodes: the first operand's dtype
/// of the first contraction if there is one, otherwise the float dtype of the
/// largest output; f32 if no float value is involved.
ir::DType workDType(const std::vector<const ir::Node *> &nodes) {
  for (const ir::Node *n : nodes)
    if (n->op() && n->op()->fusionClass == ir::FusionClass::kContraction && n->input(0) &&
        ir::isFloat(n->input(0)->type().dtype))
      return n->input(0)->type().dtype;
  ir::DType best = ir::DType::kF32;
  double bestElems = -1;
  for (const ir::Node *n : nodes)
    for (const ir::Value *v : n->outputs())
      if (v && ir::isFloat(v->type().dtype) && elems(v) > bestElems) {
        best = v->type().dtype;
        bestElems = elems(v);
      }
  return best;
}

}  // namespace

double operandReadBytes(const ir::Node &node, int i) {
  return readBytes(node, opRule(node), i);
}

OpCost opCost(const ir::Node &node) {
  OpCost c;
  if (!node.op()) return c;
  for (const ir::Value *v : node.outputs())
    if (!isStatic(v)) return c;
  OpRule r = opRule(node);
  // Each distinct input value is read once, at the largest use.
  std::vector<std::pair<const ir::Value *, double>> reads;
  for (int i = 0; i < node.numInputs(); ++i) {
    double b = readBytes(node, r, i);
    if (b < 0) return c;
    const ir::Value *v = node.input(i);
    if (!v) continue;
    auto it = std::find_if(reads.begin(), reads.end(),
                           [&](const auto &p) { return p.first == v; });
    if (it == reads.end())
      reads.emplace_back(v, b);
    else
      it->second = std::max(it->second, b);
  }
  for (const auto &p : reads) c.bytesRead += p.second;
  for (const ir::Value *v : node.outputs()) c.bytesWritten += valueBytes(v);
  c.flops = r.flops;
  c.contraction = r.contraction;
  c.known = true;
  return c;
}

GroupCost nodeCost(const ir::Node &node, const TargetSpec &target) {
  GroupCost g;
  OpCost c = opCost(node);
  if (!c.known) return g;
  g.known = true;
  g.flops = c.flops;
  g.bytes = g.bytesUnfused = c.bytes();
  g.hasContraction = c.contraction;
  g.dtype = workDType({&node});
  applyRoofline(g, target);
  return g;
}

GroupCost groupCost(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                    const TargetSpec &target) {
  return groupCost(graph, members, target, graph.userMap());
}

GroupCost groupCost(const ir::Graph &graph, const std::vector<const ir::Node *> &members,
                    const TargetSpec &target, const UserMap &users) {
  GroupCost g;
  absl::flat_hash_set<const ir::Node *> inGroup(members.begin(), members.end());
  absl::flat_hash_map<const ir::Value *, double> entering;
  absl::flat_hash_set<const ir::Value *> leaving;
  for (const ir::Node *n : members) {
    OpCost c = opCost(*n);
    if (!c.known) return GroupCost{};
    g.flops += c.flops;
    g.bytesUnfused += c.bytes();
    g.hasContraction |= c.contraction;
    OpRule r = opRule(*n);
    for (int i = 0; i < n->numInputs(); ++i) {
      const ir::Value *v = n->input(i);
      if (!v || (v->producer() && inGroup.count(v->producer()))) continue;
      double b = readBytes(*n, r, i);
      if (b < 0) return GroupCost{};
      double &slot = entering[v];
      slot = std::max(slot, b);
    }
    for (const ir::Value *v : n->outputs()) {
      bool usedOutside = graph.isGraphOutput(v);
      if (auto it = users.find(v); !usedOutside && it != users.end())
        for (const ir::Node *u : it->second)
          if (!inGroup.count(u)) usedOutside = true;
      if (usedOutside) leaving.insert(v);
    }
  }
  for (const auto &e : entering) g.bytes += e.second;
  for (const ir::Value *v : leaving) g.bytes += valueBytes(v);
  g.known = true;
  g.dtype = workDType(members);
  applyRoofline(g, target);
  return g;
}

void addLoweringBytes(GroupCost &cost, double bytes, const TargetSpec &target) {
  if (bytes <= 0) return;
  cost.bytes += bytes;
  applyRoofline(cost, target);
}

void fillKernelCost(const GroupCost &cost, Kernel &kernel) {
  kernel.flops = cost.flops;
  kernel.bytes = cost.bytes;
  kernel.bytesUnfused = cost.bytesUnfused;
  kernel.arithmeticIntensity = cost.arithmeticIntensity;
  kernel.memoryBound = cost.memoryBound;
  kernel.rooflineUs = cost.rooflineUs;
}

}  // namespace fusec::passes
