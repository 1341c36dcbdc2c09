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
// SiLU: x * Sigmoid(x) -> Swish(x) (alpha = 1; ONNX Swish, opset 24), only
// when the op table has the Swish row.
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "passes/canonicalize/Patterns.h"

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

}  // namespace fusec::passes::canonicalize
