//===- ImportFuzzer.cpp - libFuzzer harness: ONNX bytes to backend sources -===//
//
// bytes -> ONNX import -> verifier -> for each backend with a code generator
// (cuda, nki): the driver's pass pipeline for that target (every symbolic or
// unknown input dim bound to a small extent, so shape specialisation,
// folding, fusion with the backend's legality rule and lowering all run) ->
// the backend's emission into memory (no nvcc, no files). Any crash, hang,
// sanitizer report or allocation past libFuzzer's -malloc_limit_mb is a bug:
// bad input must come back as an absl::Status.
//
//===----------------------------------------------------------------------===//
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/Backend.h"
#include "driver/Driver.h"
#include "frontend/onnx/OnnxImporter.h"
#include "ir/Verifier.h"
#include "passes/fusion/FusionPlan.h"

namespace {

/// The extent every symbolic or unknown input dim is bound to.
constexpr int64_t kSymbolExtent = 2;

void compileFor(const std::string &bytes, const char *target) {
  using namespace fusec;
  auto graph = frontend::importOnnxModelFromBytes(bytes, "");
  if (!graph.ok() || !ir::verifyGraph(**graph).ok()) return;
  driver::CompileOptions options;
  options.target = target;
  for (const ir::Value *in : (*graph)->inputs()) {
    const ir::TensorType &t = in->type();
    if (!t.rankKnown) return;
    std::vector<int64_t> dims;
    for (const ir::Dim &d : t.shape) dims.push_back(d.isStatic() ? d.value : kSymbolExtent);
    options.inputShapes[in->name()] = dims;
  }
  auto resolved = driver::resolveOptions(options);
  if (!resolved.ok()) __builtin_trap();  // the built-in table must resolve cuda and nki
  passes::PassContext ctx;
  if (!driver::optimize(**graph, options, *resolved, ctx).ok()) return;
  auto backend = codegen::backendFor(target);
  if (!backend.ok()) __builtin_trap();
  codegen::BackendOptions bopts;
  bopts.arch = resolved->arch;
  bopts.device = resolved->device;
  bopts.buildLibrary = false;
  (void)(*backend)->emit(**graph, passes::kernelNames(ctx.fusionPlan), bopts);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string bytes(reinterpret_cast<const char *>(data), size);
  compileFor(bytes, "cuda");
  compileFor(bytes, "nki");
  return 0;
}
