//===- FusecEmitCuda.cpp - Test tool: text IR -> fused -> CUDA / KernelSpecs ===//
//
// fusec-emit-cuda [--spec] [--steps] [--manifest] [--no-fusion] [--row-threads=N] FILE|-
//   Parses text IR, runs the fusion pass, lowers every kernel and prints the
//   generated CUDA source (default), the KernelSpecs (--spec), the step list
//   (--steps) or a JSON manifest of the steps with every buffer's name, dtype
//   and shape plus the graph inputs/outputs (--manifest; bench/rowkernels
//   reads it). --row-threads caps the threads per row of row kernels
//   (CudaOptions::rowMaxThreads, a tuning knob). Used by the lit tests in
//   test/lit/codegen.
//
//===----------------------------------------------------------------------===//
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "program/Lowering.h"
#include "codegen/cuda/CublasEpilogue.h"
#include "codegen/cuda/CudaEmitter.h"
#include "test/unit/codegen/CodegenTestUtil.h"

using namespace fusec;

int main(int argc, char **argv) {
  bool spec = false, steps = false, manifest = false, fuse = true;
  codegen::CudaOptions opts;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--spec")) spec = true;
    else if (!std::strcmp(argv[i], "--steps")) steps = true;
    else if (!std::strcmp(argv[i], "--manifest")) manifest = true;
    else if (!std::strncmp(argv[i], "--row-threads=", 14)) opts.rowMaxThreads = std::atoi(argv[i] + 14);
    else if (!std::strcmp(argv[i], "--no-fusion")) fuse = false;
    else file = argv[i];
  }
  if (file.empty()) {
    std::cerr << "usage: fusec-emit-cuda [--spec] [--steps] [--manifest] [--no-fusion] [--row-threads=N] FILE|-\n";
    return 2;
  }
  std::stringstream ss;
  if (file == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream f(file);
    if (!f) {
      std::cerr << "error: cannot open " << file << "\n";
      return 1;
    }
    ss << f.rdbuf();
  }
  auto fused = codegen::testing::parseAndFuse(ss.str(), fuse);
  if (!fused.ok()) {
    std::cerr << "error: " << fused.status().message() << "\n";
    return 1;
  }
  const ir::Graph &g = *(*fused)->graph;
  const passes::FusionPlan &plan = (*fused)->ctx.fusionPlan;
  if (spec) {
    auto items = program::lowerGraph(g, passes::kernelNames(plan), codegen::cudaLoweringOptions(false));
    if (!items.ok()) {
      std::cerr << "error: " << items.status().message() << "\n";
      return 1;
    }
    for (const codegen::WorkItem &it : *items) {
      std::cout << "// item " << it.name << "\n";
      if (it.kind == codegen::WorkItem::Kind::kGemm) {
        const codegen::GemmParams &p = it.gemm;
        std::cout << "gemm m=" << p.m << " n=" << p.n << " k=" << p.k << " batch=" << p.batch
                  << " stride_a=" << p.strideA << " stride_b=" << p.strideB << " trans_a=" << p.transA
                  << " trans_b=" << p.transB << " alpha=" << p.alpha << " beta=" << p.beta
                  << " epilogue=" << codegen::cublasLtEpilogue(p.epilogue).value_or("?") << " d=%" << p.d->name()
                  << (p.bias ? " bias=%" + p.bias->name() : "") << " dtype=" << ir::dtypeName(p.dtype)
                  << " d_dtype=" << ir::dtypeName(p.dDtype) << "\n";
      } else if (it.kind == codegen::WorkItem::Kind::kConv) {
        std::cout << "conv y=%" << it.conv.y->name() << "\n";
      } else {
        std::cout << codegen::printKernelSpec(it.spec);
      }
    }
    return 0;
  }
  if (opts.rowMaxThreads != 0 &&
      (opts.rowMaxThreads < 32 || opts.rowMaxThreads > 1024 || opts.rowMaxThreads % 32 != 0)) {
    std::cerr << "error: --row-threads must be a multiple of 32 in [32, 1024]\n";
    return 2;
  }
  auto mod = codegen::lowerToCuda(g, plan, opts);
  if (!mod.ok()) {
    std::cerr << "error: " << mod.status().message() << "\n";
    return 1;
  }
  if (steps) {
    for (const codegen::Step &s : mod->steps) {
      std::cout << "step " << s.name << " ";
      if (!s.guard.empty()) std::cout << "[" << ir::describeGuard(s.guard) << "] ";
      switch (s.kind) {
        case codegen::Step::Kind::kKernel:
          std::cout << "kernel " << s.symbol << " (";
          for (size_t i = 0; i < s.buffers.size(); ++i)
            std::cout << (i ? ", " : "") << "%" << s.buffers[i]->name();
          std::cout << ")\n";
          break;
        case codegen::Step::Kind::kGemm:
          std::cout << "gemm " << codegen::cublasLtEpilogue(s.gemm.epilogue).value_or("?")
                    << (s.gemm.dDtype != s.gemm.dtype
                            ? std::string(" d_dtype=") + ir::dtypeName(s.gemm.dDtype)
                            : std::string())
                    << " -> %" << s.gemm.d->name() << "\n";
          break;
        case codegen::Step::Kind::kConv: std::cout << "conv -> %" << s.conv.y->name() << "\n"; break;
        case codegen::Step::Kind::kCopy: std::cout << "copy\n"; break;
      }
    }
    return 0;
  }
  if (manifest) {
    auto value = [](const ir::Value *v) {
      std::ostringstream o;
      o << "{\"name\": \"" << v->name() << "\", \"dtype\": \"" << ir::dtypeName(v->type().dtype)
        << "\", \"shape\": [";
      const ir::Shape sh = v->type().staticShape();
      for (size_t i = 0; i < sh.size(); ++i) o << (i ? ", " : "") << sh[i];
      o << "]}";
      return o.str();
    };
    auto list = [&](const std::vector<const ir::Value *> &vs) {
      std::string o = "[";
      for (size_t i = 0; i < vs.size(); ++i) o += (i ? ", " : "") + value(vs[i]);
      return o + "]";
    };
    std::vector<const ir::Value *> ins(g.inputs().begin(), g.inputs().end());
    std::vector<const ir::Value *> outs(g.outputs().begin(), g.outputs().end());
    std::cout << "{\"inputs\": " << list(ins) << ",\n \"outputs\": " << list(outs) << ",\n \"steps\": [";
    for (size_t i = 0; i < mod->steps.size(); ++i) {
      const codegen::Step &s = mod->steps[i];
      std::cout << (i ? ",\n  " : "\n  ") << "{\"name\": \"" << s.name << "\", \"kind\": \""
                << (s.kind == codegen::Step::Kind::kKernel ? "kernel" : "library") << "\", \"symbol\": \""
                << s.symbol << "\", \"buffers\": " << list(s.buffers) << "}";
    }
    std::cout << "]}\n";
    return 0;
  }
  std::cout << mod->source;
  return 0;
}
