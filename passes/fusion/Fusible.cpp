//===- Fusible.cpp - Which ops may share a kernel, and why not ------------===//
#include "passes/fusion/Fusible.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace fusec::passes {

using ir::OpKind;

const char *roleName(Role r) {
  switch (r) {
    case Role::kView: return "view";
    case Role::kElementwise: return "elementwise";
    case Role::kLayout: return "layout";
    case Role::kMovement: return "data movement";
    case Role::kRowReduction: return "row reduction";
    case Role::kReduction: return "reduction";
    case Role::kContraction: return "contraction";
    case Role::kShape: return "shape computation";
    case Role::kOpaque: return "opaque";
  }
  return "opaque";
}

namespace {

/// The axes a Reduce* node reduces, normalised to [0, rank); nullopt if they
/// are not known at compile time. Empty axes mean all axes.
std::optional<std::vector<int64_t>> reduceAxes(const ir::Node &node, int64_t rank) {
  std::vector<int64_t> axes;
  if (const ir::Value *a = node.input(1)) {
    if (!a->isConstant()) return std::nullopt;
    axes = a->constant()->toInts();
  }
  if (axes.empty()) {
    if (node.getInt("noop_with_empty_axes", 0)) return axes;
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int64_t &x : axes) {
    if (x < 0) x += rank;
    if (x < 0 || x >= rank) return std::nullopt;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

/// First reduced axis of a row reduction (the row is [axis, rank)).
std::optional<int64_t> rowStartAxis(const ir::Node &node) {
  const ir::Value *x = node.input(0);
  if (!x || !x->type().rankKnown) return std::nullopt;
  int64_t rank = x->type().rank();
  switch (node.kind()) {
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
    case OpKind::kHardmax:
    case OpKind::kLayerNormalization:
    case OpKind::kRMSNormalization: {
      int64_t axis = node.getInt("axis", -1);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) return std::nullopt;
      // Softmax reduces one axis; it is a row reduction only on the last one.
      if ((node.kind() == OpKind::kSoftmax || node.kind() == OpKind::kLogSoftmax ||
           node.kind() == OpKind::kHardmax) &&
          axis != rank - 1)
        return std::nullopt;
      return axis;
    }
    case OpKind::kReduceMean:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kReduceProd:
    case OpKind::kReduceSumSquare:
    case OpKind::kReduceL2: {
      auto axes = reduceAxes(node, rank);
      if (!axes || axes->empty()) return std::nullopt;
      // Trailing and contiguous: {k, k+1, ..., rank-1}.
      for (size_t i = 0; i < axes->size(); ++i)
        if ((*axes)[i] != rank - static_cast<int64_t>(axes->size()) + static_cast<int64_t>(i))
          return std::nullopt;
      return axes->front();
    }
    case OpKind::kArgMax:
    case OpKind::kArgMin: {
      int64_t axis = node.getInt("axis", 0);
      if (axis < 0) axis += rank;
      return axis == rank - 1 ? std::optional<int64_t>(axis) : std::nullopt;
    }
    case OpKind::kAbs: case OpKind::kNeg: case OpKind::kExp: case OpKind::kLog: case OpKind::kSqrt:
    case OpKind::kReciprocal: case OpKind::kErf: case OpKind::kTanh: case OpKind::kSigmoid:
    case OpKind::kRelu: case OpKind::kLeakyRelu: case OpKind::kElu: case OpKind::kHardSigmoid:
    case OpKind::kSoftplus: case OpKind::kSwish: case OpKind::kGelu: case OpKind::kSin: case OpKind::kCos:
    case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos: case OpKind::kAtan: case OpKind::kSinh:
    case OpKind::kCosh: case OpKind::kAsinh: case OpKind::kAcosh: case OpKind::kAtanh:
    case OpKind::kFloor: case OpKind::kCeil: case OpKind::kRound: case OpKind::kSign:
    case OpKind::kNot: case OpKind::kIsNaN: case OpKind::kIsInf: case OpKind::kCast:
    case OpKind::kIdentity: case OpKind::kDropout: case OpKind::kClip: case OpKind::kAdd:
    case OpKind::kSub: case OpKind::kMul: case OpKind::kDiv: case OpKind::kPow: case OpKind::kMod:
    case OpKind::kMax: case OpKind::kMin: case OpKind::kSum: case OpKind::kMean:
    case OpKind::kEqual: case OpKind::kLess: case OpKind::kLessOrEqual: case OpKind::kGreater:
    case OpKind::kGreaterOrEqual: case OpKind::kAnd: case OpKind::kOr: case OpKind::kXor:
    case OpKind::kWhere: case OpKind::kMatMul: case OpKind::kGemm: case OpKind::kConv:
    case OpKind::kBatchNormalization: case OpKind::kMaxPool: case OpKind::kAveragePool:
    case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool: case OpKind::kReshape:
    case OpKind::kTranspose: case OpKind::kFlatten: case OpKind::kSqueeze: case OpKind::kUnsqueeze:
    case OpKind::kConcat: case OpKind::kSplit: case OpKind::kSlice: case OpKind::kGather:
    case OpKind::kGatherElements: case OpKind::kGatherND: case OpKind::kExpand: case OpKind::kTile:
    case OpKind::kTrilu: case OpKind::kPad: case OpKind::kShape: case OpKind::kSize:
    case OpKind::kConstantOfShape: case OpKind::kRange: case OpKind::kConstant:
    case OpKind::kFusedAttention: case OpKind::kUnregistered:
    case OpKind::kPRelu: case OpKind::kCumSum: case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kCumProd: case OpKind::kCompress: case OpKind::kBitCast: case OpKind::kCol2Im: case OpKind::kUnique: case OpKind::kTensorScatter: case OpKind::kNonMaxSuppression: case OpKind::kDet: case OpKind::kResize: case OpKind::kConvTranspose:
    case OpKind::kTopK: case OpKind::kOneHot: case OpKind::kScatterND: case OpKind::kScatterElements: case OpKind::kBitShift: case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear:
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
      return std::nullopt;
  }
  return std::nullopt;  // an OpKind out of range
}

std::optional<int64_t> numElementsOf(const ir::Value &v) { return v.type().numElements(); }

/// Whether a row of \p len elements, kept in fp32 with its statistics, fits
/// the on-chip memory one row can use (TargetSpec::onChipRowBytes: SBUF per
/// partition on NKI, where a row lies on one partition; shared memory per SM
/// on GPUs). A row that does not is streamed in several passes, which would
/// recompute a fused prologue once per pass.
FusionDecision rowFitsOnChip(int64_t len, const TargetSpec &target) {
  const int64_t rowBytes = len * 4;
  const int64_t capacity = target.onChipRowBytes();
  if (rowBytes <= capacity) return FusionDecision::yes();
  return FusionDecision::no(absl::StrCat(
      "would need a second pass over a row larger than on-chip memory (row of ", len, " elements = ", rowBytes,
      " bytes > ", capacity, target.partitioned.present() ? " bytes of SBUF per partition)" : " bytes)"));
}

bool isAnchorReduction(const GroupShape &g) { return g.kind == KernelKind::kReduction; }
bool isLibraryCall(const GroupShape &g) {
  return g.kind == KernelKind::kGemm || g.kind == KernelKind::kConv;
}

}  // namespace

Role roleOf(const ir::Node &node) {
  switch (node.kind()) {
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
    case OpKind::kFlatten:
    case OpKind::kIdentity:
      return Role::kView;
    case OpKind::kDropout:
      return node.numOutputs() > 1 ? Role::kElementwise : Role::kView;
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kGather:
    case OpKind::kGatherElements:
    case OpKind::kGatherND:
    case OpKind::kExpand:
    case OpKind::kTile:
    case OpKind::kTrilu:
    case OpKind::kResize:  // a window of taps per output element: index arithmetic
    // A select over its inputs along the axis, each read at the index minus
    // its offset (foldsAsIndexArithmetic() bounds the inputs).
    case OpKind::kConcat:
      return Role::kLayout;
    case OpKind::kSplit:
    case OpKind::kPad:
      return Role::kMovement;
    case OpKind::kMatMul:
    case OpKind::kGemm:
    case OpKind::kConv:
      return Role::kContraction;
    case OpKind::kUnregistered:
    // A generated kernel of its own (no library call yet: program/lowering/
    // Pooling.cpp): neither a prologue nor an epilogue fuses into it.
    case OpKind::kConvTranspose:
      return Role::kOpaque;
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
    case OpKind::kXor: case OpKind::kWhere: case OpKind::kSoftmax: case OpKind::kLogSoftmax:
    case OpKind::kLayerNormalization: case OpKind::kRMSNormalization:
    case OpKind::kBatchNormalization: case OpKind::kReduceMean: case OpKind::kReduceSum:
    case OpKind::kReduceMax: case OpKind::kReduceMin: case OpKind::kReduceProd:
    case OpKind::kReduceSumSquare: case OpKind::kReduceL2: case OpKind::kArgMax:
    case OpKind::kArgMin: case OpKind::kMaxPool: case OpKind::kAveragePool:
    case OpKind::kGlobalAveragePool: case OpKind::kGlobalMaxPool: case OpKind::kShape:
    case OpKind::kSize: case OpKind::kConstantOfShape: case OpKind::kRange: case OpKind::kConstant:
    case OpKind::kFusedAttention: case OpKind::kPRelu: case OpKind::kCumSum: case OpKind::kGridSample: case OpKind::kRoiAlign: case OpKind::kCumProd: case OpKind::kCompress: case OpKind::kBitCast: case OpKind::kCol2Im: case OpKind::kUnique: case OpKind::kTensorScatter: case OpKind::kNonMaxSuppression: case OpKind::kDet:
    case OpKind::kTopK: case OpKind::kHardmax: case OpKind::kOneHot: case OpKind::kScatterND: case OpKind::kScatterElements: case OpKind::kBitShift: case OpKind::kQuantizeLinear: case OpKind::kDequantizeLinear:
    case OpKind::kBitwiseAnd: case OpKind::kBitwiseOr: case OpKind::kBitwiseXor: case OpKind::kBitwiseNot:
      break;
  }
  if (!node.op()) return Role::kOpaque;
  switch (node.op()->fusionClass) {
    case ir::FusionClass::kElementwise: return Role::kElementwise;
    case ir::FusionClass::kInjective: return Role::kLayout;
    case ir::FusionClass::kReduction:
      return rowStartAxis(node) ? Role::kRowReduction : Role::kReduction;
    case ir::FusionClass::kContraction: return Role::kContraction;
    case ir::FusionClass::kShape: return Role::kShape;
    case ir::FusionClass::kOpaque: return Role::kOpaque;
  }
  return Role::kOpaque;
}

std::optional<int64_t> rowLength(const ir::Node &node) {
  auto start = rowStartAxis(node);
  if (!start) return std::nullopt;
  const ir::TensorType &t = node.input(0)->type();
  int64_t n = 1;
  for (int64_t d = *start; d < t.rank(); ++d) {
    if (!t.shape[d].isStatic()) return std::nullopt;
    n *= t.shape[d].value;
  }
  return n;
}

FusionDecision foldsAsIndexArithmetic(const ir::Node &node) {
  switch (node.kind()) {
    case OpKind::kSlice:
      // starts, ends, axes, steps: the load index is start + step * i.
      for (int i = 1; i < std::min(node.numInputs(), 5); ++i)
        if (const ir::Value *v = node.input(i); v && !v->isConstant())
          return FusionDecision::no(absl::StrCat(
              "Slice '", node.name(), "' has its ", i == 1 ? "starts" : i == 2 ? "ends" : i == 3 ? "axes" : "steps",
              " known only at run time; the load index needs them at compile time, so it runs as its own kernel"));
      return FusionDecision::yes();
    case OpKind::kConcat: {
      const ir::Value *out = node.output(0);
      if (!out || !out->type().rankKnown)
        return FusionDecision::no(absl::StrCat("Concat '", node.name(), "' has an unknown rank"));
      const int64_t rank = out->type().rank();
      int64_t axis = node.getInt("axis", 0);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank)
        return FusionDecision::no(absl::StrCat("Concat '", node.name(), "' has an axis out of range"));
      int inputs = 0;
      for (const ir::Value *in : node.inputs()) {
        if (!in || !in->type().rankKnown || in->type().rank() != rank || !in->type().shape[axis].isStatic())
          return FusionDecision::no(absl::StrCat(
              "Concat '", node.name(), "': an input's extent along axis ", axis,
              " is not static, so the select's bounds are not known; it runs as its own kernel"));
        inputs += in->type().shape[axis].value != 0;
      }
      if (inputs > kMaxConcatSelectInputs)
        return FusionDecision::no(absl::StrCat(
            "Concat '", node.name(), "' of ", inputs, " inputs runs as its own kernel: folded, every output element "
            "would evaluate a select over ", inputs, " values (at most ", kMaxConcatSelectInputs, " fold)"));
      return FusionDecision::yes();
    }
    default:
      return FusionDecision::yes();
  }
}

std::string describeFoldedLayout(const ir::Node &node) {
  switch (node.kind()) {
    case OpKind::kSlice: return "Slice folded into the load index";
    case OpKind::kConcat: {
      const ir::Value *out = node.output(0);
      int64_t axis = node.getInt("axis", 0);
      if (out && out->type().rankKnown && axis < 0) axis += out->type().rank();
      return absl::StrCat("Concat as a select over axis ", axis, " (", node.numInputs(), " inputs)");
    }
    default: return "";
  }
}

KernelKind seedKind(Role r, const ir::Node &node) {
  switch (r) {
    case Role::kElementwise: return KernelKind::kElementwise;
    case Role::kLayout:
    case Role::kMovement: return KernelKind::kLayout;
    case Role::kRowReduction: return KernelKind::kReduction;
    case Role::kContraction:
      return node.kind() == OpKind::kConv ? KernelKind::kConv : KernelKind::kGemm;
    default:
      return node.kind() == OpKind::kFusedAttention ? KernelKind::kAttention : KernelKind::kOpaque;
  }
}

FusionDecision canFuse(const GroupShape &pg, const ir::Node &producer, const GroupShape &cg,
                       const ir::Node &consumer, const ir::Value &value, int64_t producerUsers,
                       int64_t usersOutside, bool producerIsGraphOutput, const TargetSpec &target) {
  const Role pr = roleOf(producer), cr = roleOf(consumer);
  auto opName = [](const ir::Node &n) { return absl::StrCat("'", n.name(), "' (", n.opType(), ")"); };

  // Nodes that run under different run-time conditions (If branches,
  // ir::Guard) never share a kernel: its step runs under one guard.
  if (producer.guard() != consumer.guard())
    return FusionDecision::no(absl::StrCat("the producer runs ", ir::describeGuard(producer.guard()),
                                           ", the consumer ", ir::describeGuard(consumer.guard()),
                                           " (If branches chosen at run time)"));

  // Attention kernels take layout ops into their operand strides (program/
  // lowering/AttentionOperands.cpp): a Transpose, Slice or Split on the way
  // to Q, K or V, and a Transpose of the result; nothing else joins them.
  auto foldsIntoAttention = [](const ir::Node &n) {
    return n.kind() == OpKind::kTranspose || n.kind() == OpKind::kSlice || n.kind() == OpKind::kSplit;
  };
  if (cg.kind == KernelKind::kAttention || pg.kind == KernelKind::kAttention) {
    // Only Q, K and V (inputs 0-2) have operand strides: a Slice or
    // Transpose feeding the bias or the mask (inputs 3 and on) is stored by
    // its own kernel.
    auto feedsBiasOrMask = [&]() {
      if (consumer.kind() != OpKind::kFusedAttention) return false;
      for (int i = 3; i < consumer.numInputs(); ++i)
        if (consumer.input(i) == &value) return true;
      return false;
    };
    const bool operandSide = cg.kind == KernelKind::kAttention && pg.kind != KernelKind::kAttention &&
                             foldsIntoAttention(producer) && !feedsBiasOrMask();
    const bool outputSide = pg.kind == KernelKind::kAttention && cg.kind != KernelKind::kAttention &&
                            producer.kind() == OpKind::kFusedAttention && consumer.kind() == OpKind::kTranspose &&
                            cg.kind == KernelKind::kLayout;
    if (!operandSide && !outputSide)
      return FusionDecision::no(
          "an attention kernel takes only Transpose/Slice/Split on its operands and a Transpose of its result "
          "(as strides)");
    if (producerUsers > 1 || producerIsGraphOutput)
      return FusionDecision::no(absl::StrCat("'", producer.name(), "' result has ", producerUsers, " consumers",
                                             producerIsGraphOutput ? " and is a graph output" : "",
                                             "; it is stored, not folded into the attention's strides"));
    return FusionDecision::yes();
  }
  if (cr == Role::kContraction) {
    if (pr == Role::kContraction || isLibraryCall(pg))
      return FusionDecision::no(
          "compute-bound on both sides: two library contractions never share a kernel");
    return FusionDecision::no(
        "consumer is a library GEMM/convolution that reads its operands from memory "
        "(no prologue fusion)");
  }
  if (cr == Role::kMovement || cr == Role::kReduction || cr == Role::kShape ||
      cr == Role::kOpaque)
    return FusionDecision::no(absl::StrCat("consumer is a ", roleName(cr),
                                           " op, which runs as its own kernel"));
  if (pr == Role::kMovement || pr == Role::kReduction || pr == Role::kShape ||
      pr == Role::kOpaque)
    return FusionDecision::no(absl::StrCat("producer is a ", roleName(pr),
                                           " op, which runs as its own kernel"));

  // Layout ops become index arithmetic of the kernel they join (Slice: the
  // load index; Concat: a select over its inputs).
  if (pr == Role::kLayout)
    if (FusionDecision d = foldsAsIndexArithmetic(producer); !d) return d;
  if (cr == Role::kLayout)
    if (FusionDecision d = foldsAsIndexArithmetic(consumer); !d) return d;

  const auto valueElems = numElementsOf(value);
  const auto consumerElems = numElementsOf(*consumer.output(0));
  if (!valueElems || !consumerElems)
    return FusionDecision::no("shapes are not static (bind them with --shape)");

  // Epilogues of library calls: elementwise ops over the GEMM output.
  if (isLibraryCall(pg)) {
    if (cr == Role::kRowReduction)
      return FusionDecision::no(
          "a row reduction cannot be a GEMM epilogue: each GEMM tile holds only part of a row");
    if (cr != Role::kElementwise || cg.anchor)
      return FusionDecision::no(absl::StrCat("consumer ", opName(consumer),
                                             " cannot be a GEMM epilogue"));
    if (producerUsers > 1 || producerIsGraphOutput)
      return FusionDecision::no(absl::StrCat(
          "GEMM result has ", producerUsers, " consumers", producerIsGraphOutput ? " and is a graph output" : "",
          "; it must be stored anyway, and recomputing the GEMM per consumer costs far more"));
    if (*consumerElems != *valueElems)
      return FusionDecision::no("the epilogue would broadcast the GEMM result to a larger shape");
    return FusionDecision::yes();
  }
  if (isLibraryCall(cg)) {
    // A side input of the epilogue (a bias or mask computed by elementwise
    // ops) can be computed inside the epilogue instead of read from memory.
    if (&consumer == cg.anchor)
      return FusionDecision::no(
          "consumer is a library GEMM/convolution that reads its operands from memory "
          "(no prologue fusion)");
    if (pg.anchor || (pr != Role::kElementwise && pr != Role::kLayout))
      return FusionDecision::no(absl::StrCat("producer ", opName(producer),
                                             " cannot be computed inside a GEMM epilogue"));
    if (producerUsers > 1 || producerIsGraphOutput)
      return FusionDecision::no(absl::StrCat(
          "producer has ", producerUsers,
          " consumers; it is materialised once instead of recomputed in each GEMM epilogue"));
    return FusionDecision::yes();
  }

  // Two anchored groups: only reductions over the same rows may share a kernel.
  if (pg.anchor && cg.anchor && pg.anchor != cg.anchor) {
    auto pr_len = rowLength(*pg.anchor), cr_len = rowLength(*cg.anchor);
    if (!(isAnchorReduction(pg) && isAnchorReduction(cg)) || !pr_len || !cr_len ||
        *pr_len != *cr_len)
      return FusionDecision::no(absl::StrCat("reductions over different rows: ", opName(*pg.anchor),
                                             " and ", opName(*cg.anchor)));
    if (FusionDecision d = rowFitsOnChip(*pr_len, target); !d) return d;
  }

  // A layout op read by several consumers is stored once, unless every one
  // of them is in the consumer's kernel: there it is re-gathered at each
  // point they read (the same input lines, no extra traffic). Not when its
  // group holds a reduction, which would be recomputed at each point.
  if (pr == Role::kLayout && producerUsers > 1 && (usersOutside > 0 || pg.anchor || producerIsGraphOutput))
    return FusionDecision::no(absl::StrCat("layout op has ", producerUsers,
                                           " consumers; it is materialised once rather than "
                                           "re-gathered inside each consumer"));

  // A prologue of a row reduction is re-read when the row does not fit on chip.
  if (cr == Role::kRowReduction) {
    if (auto len = rowLength(consumer))
      if (FusionDecision d = rowFitsOnChip(*len, target); !d) return d;
  }

  // Epilogue of a row reduction: must iterate over the reduction's rows.
  if (isAnchorReduction(pg) && !cg.anchor && pg.anchor) {
    const auto inElems = numElementsOf(*pg.anchor->input(0));
    const auto outElems = numElementsOf(*pg.anchor->output(0));
    if (*consumerElems != inElems.value_or(-1) && *consumerElems != outElems.value_or(-1))
      return FusionDecision::no(
          "the epilogue iterates over a different space than the reduction's rows");
  }
  return FusionDecision::yes();
}

}  // namespace fusec::passes
