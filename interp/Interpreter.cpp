//===- Interpreter.cpp - Reference interpreter for the IR -----------------===//
#include "interp/Interpreter.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "interp/internal/Kernels.h"
#include "support/Status.h"

namespace fusec::interp {
namespace {

const KernelTable &kernelTable() {
  static const KernelTable *table = [] {
    auto *t = new KernelTable(static_cast<size_t>(ir::OpKind::kUnregistered));
    registerElementwiseKernels(*t);
    registerReductionKernels(*t);
    registerNnKernels(*t);
    registerLayoutKernels(*t);
    registerAttentionKernels(*t);
    return t;
  }();
  return *table;
}

}  // namespace

bool supports(ir::OpKind kind) {
  if (kind == ir::OpKind::kUnregistered) return false;
  return static_cast<bool>(kernelTable()[static_cast<size_t>(kind)]);
}

absl::StatusOr<std::vector<ir::Tensor>> evaluateNode(
    const ir::Node &node, const std::vector<const ir::Tensor *> &inputs) {
  if (!supports(node.kind()))
    return absl::UnimplementedError(
        absl::StrCat("reference interpreter has no function for ", node.describe()));
  KernelArgs args{node, inputs};
  auto result = kernelTable()[static_cast<size_t>(node.kind())](args);
  if (!result.ok()) return withContext(result.status(), absl::StrCat("evaluating node ", node.describe()));
  return result;
}

absl::StatusOr<std::vector<ir::Tensor>> runGraph(
    const ir::Graph &graph, const std::map<std::string, ir::Tensor> &inputs) {
  absl::flat_hash_map<const ir::Value *, ir::Tensor> env;
  for (ir::Value *in : graph.inputs()) {
    auto it = inputs.find(in->name());
    if (it == inputs.end()) {
      if (in->isConstant()) continue;
      return absl::InvalidArgumentError(absl::StrCat("missing graph input '", in->name(), "'"));
    }
    const ir::Tensor &t = it->second;
    const ir::TensorType &ty = in->type();
    if (t.dtype() != ty.dtype)
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", in->name(), "' has dtype ", ir::dtypeName(t.dtype()),
                       ", expected ", ir::dtypeName(ty.dtype)));
    if (ty.rankKnown) {
      if (t.rank() != ty.rank())
        return absl::InvalidArgumentError(absl::StrCat("graph input '", in->name(), "' has rank ",
                                                       t.rank(), ", expected ", ty.rank()));
      for (int64_t d = 0; d < ty.rank(); ++d)
        if (ty.shape[d].isStatic() && ty.shape[d].value != t.shape()[d])
          return absl::InvalidArgumentError(
              absl::StrCat("graph input '", in->name(), "' has dim ", d, " = ", t.shape()[d],
                           ", expected ", ty.shape[d].value));
    }
    env[in] = t;
  }
  auto lookup = [&](const ir::Value *v) -> const ir::Tensor * {
    if (!v) return nullptr;
    auto it = env.find(v);
    if (it != env.end()) return &it->second;
    return v->constant();
  };
  for (const ir::Node *node : graph.nodes()) {
    std::vector<const ir::Tensor *> args;
    for (const ir::Value *v : node->inputs()) {
      const ir::Tensor *t = lookup(v);
      if (v && !t)
        return absl::InternalError(absl::StrCat("value '", v->name(), "' used by ",
                                                node->describe(), " has no value"));
      args.push_back(t);
    }
    FUSEC_ASSIGN_OR_RETURN(std::vector<ir::Tensor> results, evaluateNode(*node, args));
    if (results.size() < node->outputs().size())
      return absl::InternalError(absl::StrCat(node->describe(), " produced ", results.size(),
                                              " results, expected ", node->outputs().size()));
    for (size_t i = 0; i < node->outputs().size(); ++i)
      env[node->outputs()[i]] = std::move(results[i]);
  }
  std::vector<ir::Tensor> out;
  for (const ir::Value *v : graph.outputs()) {
    const ir::Tensor *t = lookup(v);
    if (!t) return absl::InternalError(absl::StrCat("graph output '", v->name(), "' has no value"));
    out.push_back(*t);
  }
  return out;
}

}  // namespace fusec::interp
