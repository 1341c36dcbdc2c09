//===- ImportFuzzer.cpp - libFuzzer harness: ONNX bytes to CUDA source -----===//
//
// bytes -> ONNX import -> verifier -> the cuda pass pipeline (every symbolic
// dim of the inputs bound to a small extent, so shape specialisation, folding,
// fusion and lowering all run) -> CUDA emission into memory (no nvcc, no
// files). Any crash, hang, sanitizer report or allocation past libFuzzer's
// -malloc_limit_mb is a bug: bad input must come back as an absl::Status.
//
//===----------------------------------------------------------------------===//
#include <cstddef>
#include <cstdint>
#include <string>

#include "codegen/cuda/CudaEmitter.h"
#include "frontend/onnx/OnnxImporter.h"
#include "ir/Verifier.h"
#include "passes/Pass.h"
#include "passes/Pipeline.h"

namespace {

/// The extent every symbolic or unknown input dim is bound to.
constexpr int64_t kSymbolExtent = 2;

void compile(const std::string &bytes) {
  using namespace fusec;
  auto graph = frontend::importOnnxModelFromBytes(bytes, "");
  if (!graph.ok() || !ir::verifyGraph(**graph).ok()) return;
  passes::PassContext ctx;
  for (const ir::Value *in : (*graph)->inputs()) {
    const ir::TensorType &t = in->type();
    if (!t.rankKnown) return;
    std::vector<int64_t> dims;
    for (const ir::Dim &d : t.shape) dims.push_back(d.isStatic() ? d.value : kSymbolExtent);
    ctx.inputShapes[in->name()] = dims;
  }
  static const passes::TargetSpec target = [] {
    auto t = passes::loadBuiltinTarget("h200");
    if (!t.ok()) __builtin_trap();  // the built-in table must load
    return *t;
  }();
  ctx.target = target;
  auto pipeline = passes::parsePipeline(passes::pipelineString(passes::defaultPipeline("cuda")));
  if (!pipeline.ok()) __builtin_trap();
  if (!passes::runPasses(**graph, ctx, *pipeline).ok()) return;
  (void)codegen::lowerToCuda(**graph, ctx.fusionPlan, codegen::CudaOptions{});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  compile(std::string(reinterpret_cast<const char *>(data), size));
  return 0;
}
