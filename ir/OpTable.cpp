//===- OpTable.cpp - Op descriptions read by every part of fusec ----------===//
#include "ir/OpTable.h"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "ir/Graph.h"

namespace fusec::ir {

namespace {

/// The metadata-operand mask of an Operands(i, ...) column of Ops.def.
template <typename... I>
constexpr uint32_t Operands(I... operands) {
  uint32_t mask = 0;
  for (int i : std::initializer_list<int>{operands...}) mask |= uint32_t{1} << i;
  return mask;
}

/// Every input (variadic ops' FUSEC_DTYPES rows).
constexpr uint32_t AllOperands = ~uint32_t{0};

constexpr ViewTrait NoView = ViewTrait::kNone;
constexpr ViewTrait View = ViewTrait::kView;
constexpr ViewTrait ViewIfOneOutput = ViewTrait::kViewIfOneOutput;
constexpr RowTrait NoRow = RowTrait::kNone;
constexpr RowTrait RowLastAxis = RowTrait::kLastAxis;
constexpr RowTrait RowFromAxis = RowTrait::kFromAxis;
constexpr RowTrait RowTrailingAxes = RowTrait::kTrailingAxes;

// Attribute C++ types of the FUSEC_ATTR rows' Kind column.
using Int = int64_t;
using Float = float;
using String = std::string;

std::vector<OpInfo> buildTable() {
  std::vector<OpInfo> ops;
#define FUSEC_OP(E, N, MinI, MaxI, MinO, MaxO, C, V, R, M, D) \
  ops.push_back(                                              \
      OpInfo{OpKind::k##E, N, MinI, MaxI, MinO, MaxO, FusionClass::k##C, D, V, R, M, {}, {}, {}});
#define FUSEC_ATTR(Op, Name, K, Dflt)                                              \
  ops[static_cast<int>(OpKind::k##Op)].attrs.push_back(                            \
      AttrSpec{#Name, Attribute::Kind::k##K, AttrSpec::Default::kValue, Attribute(K(Dflt))});
#define FUSEC_ATTR_DERIVED(Op, Name, K)                 \
  ops[static_cast<int>(OpKind::k##Op)].attrs.push_back( \
      AttrSpec{#Name, Attribute::Kind::k##K, AttrSpec::Default::kDerived, Attribute()});
#define FUSEC_ATTR_REQUIRED(Op, Name, K)                \
  ops[static_cast<int>(OpKind::k##Op)].attrs.push_back( \
      AttrSpec{#Name, Attribute::Kind::k##K, AttrSpec::Default::kRequired, Attribute()});
#define FUSEC_DTYPES(Op, Class, Operands) \
  ops[static_cast<int>(OpKind::k##Op)].dtypes.push_back(DTypeRule{DTypeClass::k##Class, Operands});
#define FUSEC_SCALARS(Op, Class, Operands) \
  ops[static_cast<int>(OpKind::k##Op)].scalars.push_back(ScalarRule{ScalarClass::k##Class, Operands});
#include "ir/Ops.def"
  return ops;
}

}  // namespace

const std::vector<OpInfo> &allOps() {
  static const std::vector<OpInfo> *ops = new std::vector<OpInfo>(buildTable());
  return *ops;
}

const OpInfo *lookupOp(std::string_view name) {
  static const auto *byName = [] {
    auto *m = new absl::flat_hash_map<std::string_view, const OpInfo *>();
    for (const OpInfo &info : allOps()) (*m)[info.name] = &info;
    return m;
  }();
  auto it = byName->find(name);
  return it == byName->end() ? nullptr : it->second;
}

bool dtypeInClass(DType dtype, DTypeClass cls) {
  switch (cls) {
    case DTypeClass::kFloat: return isFloat(dtype);
    case DTypeClass::kNumeric: return isFloat(dtype) || isInteger(dtype);
    case DTypeClass::kIndex: return dtype == DType::kI32 || dtype == DType::kI64;
    case DTypeClass::kBool: return dtype == DType::kBool;
    case DTypeClass::kQuantized: return isInteger(dtype) || isNarrow(dtype);
    case DTypeClass::kScale: return isFloat(dtype) || dtype == DType::kF8E8M0;
    case DTypeClass::kAny: return true;
  }
  return false;
}

const char *dtypeClassName(DTypeClass cls) {
  switch (cls) {
    case DTypeClass::kFloat: return "float";
    case DTypeClass::kNumeric: return "numeric";
    case DTypeClass::kIndex: return "index (i32/i64)";
    case DTypeClass::kBool: return "bool";
    case DTypeClass::kQuantized: return "quantised (integer, float8, float4, int4, int2)";
    case DTypeClass::kScale: return "scale (float, f8e8m0)";
    case DTypeClass::kAny: return "any";
  }
  return "?";
}

const OpInfo &opInfo(OpKind kind) { return allOps()[static_cast<int>(kind)]; }

const char *fusionClassName(FusionClass c) {
  switch (c) {
    case FusionClass::kElementwise: return "elementwise";
    case FusionClass::kInjective: return "injective";
    case FusionClass::kReduction: return "reduction";
    case FusionClass::kContraction: return "contraction";
    case FusionClass::kShape: return "shape";
    case FusionClass::kOpaque: return "opaque";
  }
  return "opaque";
}

const AttrSpec *findAttrSpec(OpKind kind, std::string_view name) {
  if (kind == OpKind::kUnregistered) return nullptr;
  for (const AttrSpec &s : opInfo(kind).attrs)
    if (name == s.name) return &s;
  return nullptr;
}

bool isMetadataOperand(OpKind kind, int operand) {
  if (kind == OpKind::kUnregistered || operand < 0 || operand >= 32) return false;
  return (opInfo(kind).metadataOperands >> operand) & 1u;
}

bool nodeIsView(const Node &node) {
  if (node.kind() == OpKind::kUnregistered) return false;
  switch (opInfo(node.kind()).view) {
    case ViewTrait::kNone: return false;
    case ViewTrait::kView: return true;
    case ViewTrait::kViewIfOneOutput:
      return node.numOutputs() < 2 || node.output(1) == nullptr;
  }
  return false;
}

std::optional<RowAxes> rowAxes(const Node &node) {
  if (node.kind() == OpKind::kUnregistered) return std::nullopt;
  const Value *x = node.input(0);
  if (!x || !x->type().rankKnown) return std::nullopt;
  const int64_t rank = x->type().rank();
  auto normalised = [rank](int64_t a) -> std::optional<int64_t> {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return std::nullopt;
    return a;
  };
  switch (opInfo(node.kind()).row) {
    case RowTrait::kNone: return std::nullopt;
    case RowTrait::kLastAxis: {
      auto axis = normalised(node.attrI("axis"));
      if (!axis || *axis != rank - 1) return std::nullopt;
      return RowAxes{*axis, rank};
    }
    case RowTrait::kFromAxis: {
      auto axis = normalised(node.attrI("axis"));
      if (!axis) return std::nullopt;
      return RowAxes{*axis, rank};
    }
    case RowTrait::kTrailingAxes: {
      std::vector<int64_t> axes;
      if (const Value *a = node.input(1)) {
        if (!a->isConstant()) return std::nullopt;
        axes = a->constant()->toInts();
      }
      if (axes.empty()) {
        if (node.attrI("noop_with_empty_axes")) return std::nullopt;
        for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
      }
      for (int64_t &a : axes) {
        auto n = normalised(a);
        if (!n) return std::nullopt;
        a = *n;
      }
      std::sort(axes.begin(), axes.end());
      const int64_t first = rank - static_cast<int64_t>(axes.size());
      for (size_t i = 0; i < axes.size(); ++i)
        if (axes[i] != first + static_cast<int64_t>(i)) return std::nullopt;
      return RowAxes{first, rank};
    }
  }
  return std::nullopt;
}

}  // namespace fusec::ir
