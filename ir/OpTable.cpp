//===- OpTable.cpp - Op descriptions read by every part of fusec ----------===//
#include "ir/OpTable.h"

#include "absl/container/flat_hash_map.h"

namespace fusec::ir {

const std::vector<OpInfo> &allOps() {
  static const std::vector<OpInfo> *ops = new std::vector<OpInfo>{
#define FUSEC_OP(E, N, MinI, MaxI, MinO, MaxO, C, D) \
  OpInfo{OpKind::k##E, N, MinI, MaxI, MinO, MaxO, FusionClass::k##C, D},
#include "ir/Ops.def"
  };
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

}  // namespace fusec::ir
