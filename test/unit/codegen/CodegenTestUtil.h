//===- CodegenTestUtil.h - Helpers for codegen tests and fusec-emit-cuda -*- C++ -*-===//
//
// Parses text IR, runs the fusion pass, and compiles generated CUDA with the
// nvcc found on PATH or in /usr/local/cuda/bin.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_CODEGEN_CODEGENTESTUTIL_H
#define FUSEC_TEST_UNIT_CODEGEN_CODEGENTESTUTIL_H

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codegen/Backend.h"
#include "ir/Graph.h"
#include "ir/Parser.h"
#include "ir/ShapeInference.h"
#include "passes/Pass.h"
#include "support/Status.h"

namespace fusec::codegen::testing {

struct Fused {
  std::unique_ptr<ir::Graph> graph;
  passes::PassContext ctx;
};

/// Parses \p text and runs the fusion pass (unless \p fuse is false).
inline absl::StatusOr<std::unique_ptr<Fused>> parseAndFuse(const std::string &text, bool fuse = true) {
  auto f = std::make_unique<Fused>();
  FUSEC_ASSIGN_OR_RETURN(f->graph, ir::parseGraph(text));
  FUSEC_RETURN_IF_ERROR_CTX(ir::inferShapes(*f->graph), "shape inference");
  if (fuse) {
    f->ctx.legality = codegen::legalityFor(codegen::cudaBackend(), passes::TargetSpec());  // fusion asks the lowering, as in fusec
    std::vector<std::unique_ptr<passes::Pass>> ps;
    FUSEC_ASSIGN_OR_RETURN(auto p, passes::createPass("fusion"));
    ps.push_back(std::move(p));
    FUSEC_RETURN_IF_ERROR(passes::runPasses(*f->graph, f->ctx, ps));
  }
  return f;
}

/// Path of nvcc, or "" if there is none.
inline std::string findNvcc() {
  if (const char *env = std::getenv("FUSEC_NVCC")) return env;
  for (const char *p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"}) {
    std::ifstream f(p);
    if (f.good()) return p;
  }
  if (std::system("command -v nvcc > /dev/null 2>&1") == 0) return "nvcc";
  return "";
}

/// Writes \p source to \p dir/name.cu and compiles it; \p shared builds a
/// .so (returned path), else an object file. Errors carry nvcc's output.
inline absl::StatusOr<std::string> nvccCompile(const std::string &source, const std::string &dir,
                                               const std::string &name, const std::string &arch,
                                               bool shared) {
  const std::string nvcc = findNvcc();
  if (nvcc.empty()) return absl::UnavailableError("nvcc not found");
  const std::string cu = absl::StrCat(dir, "/", name, ".cu");
  {
    std::ofstream f(cu);
    f << source;
  }
  const std::string out = absl::StrCat(dir, "/", shared ? "lib" : "", name, shared ? ".so" : ".o");
  const std::string log = absl::StrCat(dir, "/", name, ".log");
  std::string cmd = absl::StrCat(nvcc, " -std=c++17 -O3 -arch=", arch,
                                 shared ? " -shared -Xcompiler -fPIC" : " -c", " -o ", out, " ", cu,
                                 " > ", log, " 2>&1");
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream f(log);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return absl::InternalError(absl::StrCat("nvcc failed (", cmd, "):\n", text.substr(0, 4000)));
  }
  return out;
}

}  // namespace fusec::codegen::testing

#endif  // FUSEC_TEST_UNIT_CODEGEN_CODEGENTESTUTIL_H
