//===- FoldBatchNormIntoConv.cpp - Fold inference BatchNorm into Conv ----===//
//
// BatchNormalization(Conv(x, W, b), scale, B, mean, var) in inference mode,
// with W, b (if present) and all BN parameters constant and the Conv result
// used only by the BN, becomes Conv(x, W', b') with, per output channel m,
//   s[m]  = scale[m] / sqrt(var[m] + epsilon)
//   W'[m] = W[m] * s[m]
//   b'[m] = (b[m] - mean[m]) * s[m] + B[m]      (b = 0 when absent)
// (ONNX BatchNormalization-15, inference: y = (x - mean) / sqrt(var + eps)
// * scale + B, over axis 1 of NCHW). Arithmetic is in double, rounded once
// to W's dtype. New constants are created (W may be shared); the old ones
// are dropped when unused. The Conv takes the BN result's name. BN with
// training_mode=1, or parameters whose element count is not W's output
// channel count, are left alone. Statistics: "fold-bn.folded".
//
//===----------------------------------------------------------------------===//
#include <cmath>

#include "ir/ShapeInference.h"
#include "passes/Pass.h"
#include "passes/utils/PatternUtils.h"
#include "support/Status.h"

namespace fusec::passes {
namespace {

struct BnFold {
  ir::Node *bn;
  ir::Node *conv;
};

class FoldBatchNormIntoConv : public Pass {
 public:
  const char *name() const override { return "fold-bn"; }

  absl::StatusOr<bool> run(ir::Graph &graph, PassContext &ctx) override {
    // Collect.
    UseInfo uses(graph);
    std::vector<BnFold> folds;
    for (ir::Node *bn : graph.nodes()) {
      if (bn->kind() != ir::OpKind::kBatchNormalization) continue;
      if (bn->attrI("training_mode") != 0 || bn->numOutputs() != 1) continue;
      ir::Node *conv = producerOf(bn->input(0), ir::OpKind::kConv);
      if (!conv || !uses.hasOneUse(conv->output(0))) continue;
      const ir::Tensor *w = conv->input(1) ? conv->input(1)->constant() : nullptr;
      if (!w || w->rank() < 1 || !ir::isFloat(w->dtype())) continue;
      if (conv->input(2) && !conv->input(2)->constant()) continue;
      bool paramsOk = true;
      for (int i = 1; i <= 4; ++i) {
        const ir::Value *p = bn->input(i);
        paramsOk &= p && p->constant() && p->constant()->numElements() == w->shape()[0];
      }
      if (conv->input(2)) paramsOk &= conv->input(2)->constant()->numElements() == w->shape()[0];
      if (!paramsOk) continue;
      folds.push_back({bn, conv});
    }
    // Mutate.
    int64_t folded = 0;
    for (const BnFold &f : folds) {
      FUSEC_ASSIGN_OR_RETURN(bool ok, fold(graph, f));
      folded += ok;
    }
    if (folded == 0) return false;
    graph.removeDeadNodes();
    ctx.statistics["fold-bn.folded"] += folded;
    return true;
  }

 private:
  absl::StatusOr<bool> fold(ir::Graph &graph, const BnFold &f) {
    const ir::Tensor &w = *f.conv->input(1)->constant();
    int64_t channels = w.shape()[0];
    int64_t perChannel = channels ? w.numElements() / channels : 0;
    std::vector<double> scale = f.bn->input(1)->constant()->toDoubles();
    std::vector<double> shift = f.bn->input(2)->constant()->toDoubles();
    std::vector<double> mean = f.bn->input(3)->constant()->toDoubles();
    std::vector<double> var = f.bn->input(4)->constant()->toDoubles();
    std::vector<double> bias(static_cast<size_t>(channels), 0.0);
    if (f.conv->input(2)) bias = f.conv->input(2)->constant()->toDoubles();
    double eps = f.bn->getFloat("epsilon", 1e-5f);
    std::vector<double> weights = w.toDoubles();
    std::vector<double> newBias(static_cast<size_t>(channels));
    for (int64_t m = 0; m < channels; ++m) {
      double s = scale[m] / std::sqrt(var[m] + eps);
      for (int64_t i = 0; i < perChannel; ++i) weights[m * perChannel + i] *= s;
      newBias[m] = (bias[m] - mean[m]) * s + shift[m];
    }
    ir::Value *wv = graph.addConstant(graph.uniqueName(f.conv->input(1)->name() + ".bn_folded"),
                                      ir::Tensor::fromDoubles(w.dtype(), w.shape(), weights));
    ir::Value *bv = graph.addConstant(
        graph.uniqueName(f.bn->output(0)->name() + ".conv_bias"),
        ir::Tensor::fromDoubles(w.dtype(), {channels}, newBias));
    absl::StatusOr<ir::Node *> conv = createNodeBefore(graph, f.bn, "Conv",
                                                       {f.conv->input(0), wv, bv},
                                                       f.conv->attrs());
    if (!conv.ok()) return false;
    if (!typesCompatible((*conv)->output(0)->type(), f.bn->output(0)->type()) ||
        !replaceValue(graph, f.bn->output(0), (*conv)->output(0), /*takeName=*/true)) {
      graph.eraseNode(*conv);
      return false;
    }
    (*conv)->setName(f.conv->name());
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> createFoldBatchNormIntoConv() {
  return std::make_unique<FoldBatchNormIntoConv>();
}

}  // namespace fusec::passes
