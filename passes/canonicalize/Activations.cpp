//===- Activations.cpp - Recognise GELU and SiLU written as primitives ----===//
//
// GELU (ONNX Gelu, opset 20):
//   erf form   0.5 * x * (1 + erf(x / sqrt(2)))         -> Gelu(approximate="none")
//   tanh form  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
//                                                       -> Gelu(approximate="tanh")
// matched by dataflow, not by node order: the root is a Mul (or a Div by a
// constant) whose product tree, flattened through single-use Mul/Div nodes,
// has exactly two non-constant factors, x and (1 + erf(p(x))) or
// (1 + tanh(p(x))) (Add in either operand order), and constant factors whose
// product is 0.5 (so 0.5 may be applied to x, to the sum, or last, or as a
// division by 2). The erf / tanh argument p(x) is read as a polynomial in x
// (Div by 1.4142 or Mul by 0.7071; Pow(x, 3) or x*x*x; sqrt(2/pi) applied
// to the sum or distributed over it) and its coefficients must match within
// kConstantRtol.
//
// SiLU: Swish(x) {alpha = 1} (ONNX Swish, opset 24; ir/Ops.def): matchSwish
// rewrites Mul(x, Sigmoid(x)), either operand order, when the Sigmoid has no
// other user, so that a GEMM or convolution takes it as its epilogue (a
// Mul reading the GEMM result twice cannot be one: the result would have
// two consumers). x / (1 + exp(-x)) (exp argument read as a polynomial, so
// Neg(x) or x * -1) becomes Mul(x, Sigmoid(x)) first (matchSilu), and a
// Mul(Sigmoid(x), x) whose Sigmoid has other users gets the canonical
// operand order, x first.
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "passes/canonicalize/Patterns.h"
#include "support/Status.h"

namespace fusec::passes::canonicalize {
namespace {

constexpr double kSqrtHalf = 0.70710678118654752440;  // 1/sqrt(2)
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kTanhCubic = 0.044715;

}  // namespace

std::optional<Rewrite> matchGelu(ir::Node &root, const UseInfo &uses) {
  if (root.kind() != ir::OpKind::kMul && root.kind() != ir::OpKind::kDiv) return std::nullopt;
  if (!ir::isFloat(root.output(0)->type().dtype)) return std::nullopt;
  std::vector<ir::Value *> factors;
  std::vector<ir::Node *> nodes;
  double constant = 1.0;
  flattenProduct(root.output(0), uses, factors, nodes, constant);
  if (factors.size() != 2 || !approxEqual(constant, 0.5)) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    ir::Value *x = factors[i];
    ir::Node *add = producerOf(factors[1 - i], ir::OpKind::kAdd);
    if (!add || !uses.hasOneUse(add->output(0))) continue;
    for (int j = 0; j < 2; ++j) {
      if (!isSplatConstant(add->input(j), 1.0)) continue;
      ir::Node *fn = add->input(1 - j)->producer();
      if (!fn || !uses.hasOneUse(fn->output(0))) continue;
      bool isErf = fn->kind() == ir::OpKind::kErf;
      if (!isErf && fn->kind() != ir::OpKind::kTanh) continue;
      std::vector<ir::Node *> polyNodes;
      std::optional<Poly3> p = polynomialIn(fn->input(0), x, polyNodes);
      if (!p) continue;
      Poly3 expected = isErf ? Poly3{0, kSqrtHalf, 0, 0}
                             : Poly3{0, kSqrt2OverPi, 0, kSqrt2OverPi * kTanhCubic};
      if (!polyMatches(*p, expected)) continue;
      std::vector<ir::Node *> all = nodes;
      all.push_back(add);
      all.push_back(fn);
      all.insert(all.end(), polyNodes.begin(), polyNodes.end());
      if (!isSelfContained(all, &root, uses)) continue;
      ir::Node *r = &root;
      std::string approximate = isErf ? "none" : "tanh";
      return Rewrite{isErf ? "gelu-erf" : "gelu-tanh", all,
                     [r, x, approximate](ir::Graph &g) {
                       return replaceRootWith(g, r, "Gelu", {x},
                                              {{"approximate", ir::Attribute(approximate)}});
                     }};
    }
  }
  return std::nullopt;
}

std::optional<Rewrite> matchSwish(ir::Node &root, const UseInfo &uses) {
  if (root.kind() != ir::OpKind::kMul || !ir::lookupOp("Swish")) return std::nullopt;
  if (!ir::isFloat(root.output(0)->type().dtype)) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    ir::Value *x = root.input(i);
    ir::Node *sig = producerOf(root.input(1 - i), ir::OpKind::kSigmoid);
    if (!sig || sig->input(0) != x || !uses.hasOneUse(sig->output(0))) continue;
    ir::Node *r = &root;
    return Rewrite{"swish", {r, sig}, [r, x](ir::Graph &g) {
                     return replaceRootWith(g, r, "Swish", {x}, {{"alpha", ir::Attribute(1.0f)}});
                   }};
  }
  return std::nullopt;
}

std::optional<Rewrite> matchSilu(ir::Node &root, const UseInfo &uses) {
  if (!ir::isFloat(root.output(0)->type().dtype)) return std::nullopt;
  ir::Node *r = &root;
  if (root.kind() == ir::OpKind::kMul) {
    // Mul(Sigmoid(x), x) -> Mul(x, Sigmoid(x)).
    ir::Node *sig = producerOf(root.input(0), ir::OpKind::kSigmoid);
    if (!sig || sig->input(0) != root.input(1) || producerOf(root.input(1), ir::OpKind::kSigmoid))
      return std::nullopt;
    return Rewrite{"silu-order", {r}, [r](ir::Graph &g) -> absl::StatusOr<bool> {
                     ir::Value *s = r->input(0);
                     r->setInput(0, r->input(1));
                     r->setInput(1, s);
                     return true;
                   }};
  }
  if (root.kind() != ir::OpKind::kDiv) return std::nullopt;
  // Div(x, Add(1, Exp(-x))).
  ir::Value *x = root.input(0);
  ir::Node *add = producerOf(root.input(1), ir::OpKind::kAdd);
  if (!add || !uses.hasOneUse(add->output(0))) return std::nullopt;
  for (int j = 0; j < 2; ++j) {
    if (!isSplatConstant(add->input(j), 1.0, 0)) continue;
    ir::Node *exp = producerOf(add->input(1 - j), ir::OpKind::kExp);
    if (!exp || !uses.hasOneUse(exp->output(0))) continue;
    std::vector<ir::Node *> nodes{r, add, exp};
    std::optional<Poly3> p = polynomialIn(exp->input(0), x, nodes);
    if (!p || !polyMatches(*p, Poly3{0, -1, 0, 0}, 0)) continue;
    if (!isSelfContained(nodes, r, uses)) continue;
    return Rewrite{"silu", nodes, [r, x](ir::Graph &g) -> absl::StatusOr<bool> {
                     absl::StatusOr<ir::Node *> sig = createNodeBefore(g, r, "Sigmoid", {x});
                     if (!sig.ok()) return false;
                     FUSEC_ASSIGN_OR_RETURN(bool ok,
                                            replaceRootWith(g, r, "Mul", {x, (*sig)->output(0)}));
                     if (!ok) g.eraseNode(*sig);
                     return ok;
                   }};
  }
  return std::nullopt;
}

}  // namespace fusec::passes::canonicalize
