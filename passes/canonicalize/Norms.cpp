//===- Norms.cpp - Recognise LayerNorm and RMSNorm written as primitives --===//
//
// Both patterns start from the normalising node N, one of
//   Div(a, Sqrt(Add(m, eps)))
//   Mul(a, Reciprocal(Sqrt(Add(m, eps))))    (operands in either order)
//   Mul(a, Pow(Add(m, eps), -0.5))
//   Mul(a, Div(1, Sqrt(Add(m, eps))))
// with eps a splat constant (Add in either order), m = ReduceMean(sq) over
// the trailing axes [r-k, r) with keepdims=1, and sq = Pow(b, 2) or Mul(b, b).
//
// LayerNorm: a = Sub(x, ReduceMean(x)) over the same axes and b is a (or a
// duplicate Sub(x, same mean)). Then, optionally, Mul by a constant gamma and
// Add of a constant beta that vary only along the normalised axes. Result:
// LayerNormalization(x, gamma or ones, beta?) {axis = r-k, epsilon}.
//
// RMSNorm: a = b = x. Optionally x = Cast(x0 -> f32) with a Cast back to
// x0's dtype after N (the HF LlamaRMSNorm form for f16/bf16 models), then
// optionally Mul by a weight varying only along the normalised axes. Result:
// RMSNormalization(x0 or x, weight or ones) {axis = r-k, epsilon, stash_type
// = 1}, which is exactly ONNX's (opset 23) definition: normalise in f32, cast
// to X's type, multiply by scale.
//
// Every intermediate node must be used only inside the pattern. gamma /
// beta / weight are materialised with the normalised shape, which must be
// static.
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "passes/canonicalize/Patterns.h"

namespace fusec::passes::canonicalize {
namespace {

/// The matched core N: a * 1/sqrt(mean(sq(b)) + eps).
struct NormCore {
  ir::Value *a = nullptr;  ///< the normalised operand (x - mean, or x)
  ir::Value *b = nullptr;  ///< the operand squared inside the mean
  std::vector<int64_t> axes;
  double eps = 0;
  std::vector<ir::Node *> nodes;
};

/// Matches v = Add(m, eps) with m = ReduceMean(Pow(b, 2) | Mul(b, b)).
bool matchMeanSquarePlusEps(ir::Value *v, const UseInfo &uses, NormCore &core) {
  ir::Node *add = producerOf(v, ir::OpKind::kAdd);
  if (!add) return false;
  for (int i = 0; i < 2; ++i) {
    std::optional<double> eps = splatConstant(add->input(1 - i));
    ir::Node *mean = producerOf(add->input(i), ir::OpKind::kReduceMean);
    if (!eps || !mean || mean->attrI("keepdims") != 1) continue;
    ir::Value *sq = mean->input(0);
    ir::Value *b = nullptr;
    ir::Node *sqNode = nullptr;
    if (ir::Node *pow = producerOf(sq, ir::OpKind::kPow)) {
      if (isSplatConstant(pow->input(1), 2.0, 0)) b = pow->input(0), sqNode = pow;
    } else if (ir::Node *mul = producerOf(sq, ir::OpKind::kMul)) {
      if (mul->input(0) == mul->input(1)) b = mul->input(0), sqNode = mul;
    }
    if (!b || !b->type().rankKnown) continue;
    std::optional<std::vector<int64_t>> axes = reduceAxes(*mean, b->type().rank());
    if (!axes || axes->empty()) continue;
    core.b = b;
    core.eps = *eps;
    core.axes = *axes;
    core.nodes.insert(core.nodes.end(), {add, mean, sqNode});
    return true;
  }
  return false;
}

/// Matches the normalising node \p n (see the file comment).
std::optional<NormCore> matchCore(ir::Node &n, const UseInfo &uses) {
  NormCore core;
  core.nodes.push_back(&n);
  if (n.kind() == ir::OpKind::kDiv) {
    ir::Node *sqrt = producerOf(n.input(1), ir::OpKind::kSqrt);
    if (!sqrt || !matchMeanSquarePlusEps(sqrt->input(0), uses, core)) return std::nullopt;
    core.nodes.push_back(sqrt);
    core.a = n.input(0);
    return core;
  }
  if (n.kind() != ir::OpKind::kMul) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    ir::Value *inv = n.input(1 - i);
    ir::Node *p = inv->producer();
    if (!p) continue;
    NormCore c = core;
    ir::Value *sqrtOut = nullptr;
    if (p->kind() == ir::OpKind::kReciprocal) {
      sqrtOut = p->input(0);
    } else if (p->kind() == ir::OpKind::kDiv && isSplatConstant(p->input(0), 1.0, 0)) {
      sqrtOut = p->input(1);
    } else if (p->kind() == ir::OpKind::kPow && isSplatConstant(p->input(1), -0.5, 0)) {
      if (!matchMeanSquarePlusEps(p->input(0), uses, c)) continue;
      c.nodes.push_back(p);
      c.a = n.input(i);
      return c;
    }
    ir::Node *sqrt = producerOf(sqrtOut, ir::OpKind::kSqrt);
    if (!sqrt || !matchMeanSquarePlusEps(sqrt->input(0), uses, c)) continue;
    c.nodes.insert(c.nodes.end(), {p, sqrt});
    c.a = n.input(i);
    return c;
  }
  return std::nullopt;
}

/// True if \p axes are exactly the trailing axes [rank-k, rank).
bool isTrailing(const std::vector<int64_t> &axes, int64_t rank) {
  int64_t k = static_cast<int64_t>(axes.size());
  for (int64_t i = 0; i < k; ++i)
    if (axes[i] != rank - k + i) return false;
  return true;
}

/// The static normalised shape x.shape[rank-k:], or nullopt.
std::optional<ir::Shape> normalizedShape(const ir::Value *x, int64_t k) {
  const ir::TensorType &ty = x->type();
  if (!ty.rankKnown || ty.rank() < k) return std::nullopt;
  ir::Shape s;
  for (int64_t d = ty.rank() - k; d < ty.rank(); ++d) {
    if (!ty.shape[d].isStatic()) return std::nullopt;
    s.push_back(ty.shape[d].value);
  }
  return s;
}

/// If \p v's single user is \p kind with a per-channel operand (varying only
/// along the trailing k axes), returns (user, that operand).
std::pair<ir::Node *, ir::Value *> affineUser(ir::Value *v, ir::OpKind kind, int64_t k,
                                              const UseInfo &uses) {
  if (!uses.hasOneUse(v)) return {nullptr, nullptr};
  ir::Node *u = uses.users(v)[0];
  if (u->kind() != kind) return {nullptr, nullptr};
  ir::Value *other = u->input(0) == v ? u->input(1) : u->input(0);
  if (other == v) return {nullptr, nullptr};
  const ir::TensorType &ty = other->type();
  if (!ty.isStatic()) return {nullptr, nullptr};
  ir::Shape s = ty.staticShape();
  while (!s.empty() && s.front() == 1) s.erase(s.begin());
  if (static_cast<int64_t>(s.size()) > k) return {nullptr, nullptr};
  return {u, other};
}

/// Makes the per-channel operand \p v an input of exactly \p shape: used as
/// is if its shape already matches, otherwise a broadcast constant. Null if
/// impossible.
ir::Value *perChannelInput(ir::Graph &g, ir::Value *v, const ir::Shape &shape,
                           const std::string &name) {
  if (v->type().isStatic() && v->type().staticShape() == shape) return v;
  if (!v->constant()) return nullptr;
  std::optional<ir::Tensor> t =
      broadcastConstant(v->constant()->dtype(), shape, v->constant(), 0.0);
  if (!t) return nullptr;
  return g.addConstant(g.uniqueName(name), std::move(*t));
}

}  // namespace

std::optional<Rewrite> matchLayerNorm(ir::Node &root, const UseInfo &uses) {
  std::optional<NormCore> core = matchCore(root, uses);
  if (!core) return std::nullopt;
  ir::Node *sub = producerOf(core->a, ir::OpKind::kSub);
  if (!sub) return std::nullopt;
  ir::Value *x = sub->input(0);
  ir::Node *mean = producerOf(sub->input(1), ir::OpKind::kReduceMean);
  if (!mean || mean->input(0) != x || mean->attrI("keepdims") != 1) return std::nullopt;
  if (!x->type().rankKnown || !ir::isFloat(x->type().dtype)) return std::nullopt;
  int64_t rank = x->type().rank();
  std::optional<std::vector<int64_t>> axes = reduceAxes(*mean, rank);
  if (!axes || *axes != core->axes || !isTrailing(*axes, rank)) return std::nullopt;
  // The squared operand is the same difference, or a duplicate Sub(x, mean).
  if (core->b != core->a) {
    ir::Node *sub2 = producerOf(core->b, ir::OpKind::kSub);
    if (!sub2 || sub2->input(0) != x || sub2->input(1) != sub->input(1)) return std::nullopt;
    core->nodes.push_back(sub2);
  }
  int64_t k = static_cast<int64_t>(axes->size());
  std::optional<ir::Shape> normShape = normalizedShape(x, k);
  if (!normShape) return std::nullopt;
  std::vector<ir::Node *> nodes = core->nodes;
  nodes.insert(nodes.end(), {sub, mean});
  ir::Node *last = &root;
  auto [mul, gammaIn] = affineUser(root.output(0), ir::OpKind::kMul, k, uses);
  ir::Value *gamma = gammaIn;
  if (mul && gamma->constant()) {
    nodes.push_back(mul);
    last = mul;
  } else {
    gamma = nullptr;
  }
  auto [add, betaIn] = affineUser(last->output(0), ir::OpKind::kAdd, k, uses);
  ir::Value *beta = betaIn;
  if (add && beta->constant()) {
    nodes.push_back(add);
    last = add;
  } else {
    beta = nullptr;
  }
  if (!isSelfContained(nodes, last, uses)) return std::nullopt;
  double eps = core->eps;
  ir::Shape shape = *normShape;
  return Rewrite{
      "layer-norm", nodes, [=](ir::Graph &g) -> absl::StatusOr<bool> {
        ir::Value *scale = nullptr;
        if (gamma) {
          scale = perChannelInput(g, gamma, shape, gamma->name() + ".ln_scale");
        } else {
          std::optional<ir::Tensor> ones = broadcastConstant(x->type().dtype, shape, nullptr, 1.0);
          if (ones) scale = g.addConstant(g.uniqueName(x->name() + ".ln_ones"), std::move(*ones));
        }
        ir::Value *bias = beta ? perChannelInput(g, beta, shape, beta->name() + ".ln_bias") : nullptr;
        if (!scale || (beta && !bias)) return false;
        std::vector<ir::Value *> inputs{x, scale};
        if (bias) inputs.push_back(bias);
        return replaceRootWith(g, last, "LayerNormalization", inputs,
                               {{"axis", ir::Attribute(rank - k)},
                                {"epsilon", ir::Attribute(static_cast<float>(eps))}});
      }};
}

std::optional<Rewrite> matchRmsNorm(ir::Node &root, const UseInfo &uses) {
  std::optional<NormCore> core = matchCore(root, uses);
  if (!core || core->a != core->b) return std::nullopt;
  ir::Value *x = core->a;
  if (!x->type().rankKnown || !ir::isFloat(x->type().dtype)) return std::nullopt;
  int64_t rank = x->type().rank();
  if (!isTrailing(core->axes, rank)) return std::nullopt;
  int64_t k = static_cast<int64_t>(core->axes.size());
  std::optional<ir::Shape> normShape = normalizedShape(x, k);
  if (!normShape) return std::nullopt;
  std::vector<ir::Node *> nodes = core->nodes;
  ir::Node *last = &root;
  ir::Value *input = x;
  // Cast(x0 -> f32) ... Cast(-> x0's dtype).
  if (ir::Node *castIn = producerOf(x, ir::OpKind::kCast)) {
    ir::Value *x0 = castIn->input(0);
    ir::DType t0 = x0->type().dtype;
    if (t0 != x->type().dtype && ir::isFloat(t0) && uses.hasOneUse(root.output(0))) {
      ir::Node *castOut = uses.users(root.output(0))[0];
      if (castOut->kind() == ir::OpKind::kCast && castOut->getInt("to", 0) == static_cast<int64_t>(t0)) {
        nodes.push_back(castOut);
        last = castOut;
        input = x0;
        // The Cast of x stays if something else uses it; DCE removes it otherwise.
      }
    }
  }
  auto [mul, weightIn] = affineUser(last->output(0), ir::OpKind::kMul, k, uses);
  ir::Value *weight = weightIn;
  if (mul && weight->type().dtype == input->type().dtype) {
    nodes.push_back(mul);
    last = mul;
  } else {
    weight = nullptr;
  }
  if (!isSelfContained(nodes, last, uses)) return std::nullopt;
  double eps = core->eps;
  ir::Shape shape = *normShape;
  return Rewrite{
      "rms-norm", nodes, [=](ir::Graph &g) -> absl::StatusOr<bool> {
        ir::Value *scale = nullptr;
        if (weight) {
          scale = perChannelInput(g, weight, shape, weight->name() + ".rms_scale");
        } else {
          std::optional<ir::Tensor> ones =
              broadcastConstant(input->type().dtype, shape, nullptr, 1.0);
          if (ones) scale = g.addConstant(g.uniqueName(x->name() + ".rms_ones"), std::move(*ones));
        }
        if (!scale) return false;
        return replaceRootWith(g, last, "RMSNormalization", {input, scale},
                               {{"axis", ir::Attribute(rank - k)},
                                {"epsilon", ir::Attribute(static_cast<float>(eps))},
                                {"stash_type", ir::Attribute(int64_t{1})}});
      }};
}

}  // namespace fusec::passes::canonicalize
