//===- CodegenGpuTest.cpp - Run generated kernels on the GPU vs the interpreter ===//
//
// For every corpus graph without library calls: lower to CUDA, build a .so
// with nvcc, dlopen it, run each step's launcher on device buffers (outputs
// and intermediates poisoned with NaN bytes first), and compare the graph
// outputs with interp::runGraph at per-dtype tolerances. Skips, with a
// visible message, when there is no CUDA device (or no nvcc / cudart).
//
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "codegen/cuda/CudaEmitter.h"
#include "gtest/gtest.h"
#include "interp/Compare.h"
#include "interp/Interpreter.h"
#include "test/unit/codegen/CodegenCorpus.h"
#include "test/unit/codegen/CodegenTestUtil.h"

#ifdef FUSEC_HAVE_CUDART
#include <cuda_runtime.h>
#endif

namespace fusec::codegen {
namespace {

#ifdef FUSEC_HAVE_CUDART
bool haveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
#else
bool haveDevice() { return false; }
#endif

ir::Tensor randomTensor(const ir::TensorType &t, std::mt19937 &rng) {
  ir::Tensor x(t.dtype, t.staticShape());
  std::uniform_real_distribution<double> f(-2.0, 2.0);
  std::uniform_int_distribution<int64_t> i(0, 2);
  for (int64_t k = 0; k < x.numElements(); ++k) {
    if (ir::isFloat(t.dtype)) x.setDouble(k, f(rng));
    else x.setInt(k, i(rng));
  }
  return x;
}

class GpuRunTest : public ::testing::TestWithParam<testing::Case> {};

TEST_P(GpuRunTest, MatchesInterpreter) {
  const testing::Case &c = GetParam();
  if (!haveDevice())
    GTEST_SKIP() << "no CUDA device: generated kernel for '" << c.name << "' not executed";
  if (c.hasLibraryCalls) GTEST_SKIP() << "library calls (GEMM/conv) run by the runtime, not here";
  if (testing::findNvcc().empty()) GTEST_SKIP() << "nvcc not found";
#ifdef FUSEC_HAVE_CUDART
  auto f = testing::parseAndFuse(c.text);
  ASSERT_TRUE(f.ok()) << f.status();
  const ir::Graph &g = *(*f)->graph;
  auto mod = lowerToCuda(g, (*f)->ctx.fusionPlan, {});
  ASSERT_TRUE(mod.ok()) << mod.status();

  std::mt19937 rng(1234);
  std::map<std::string, ir::Tensor> inputs;
  for (const ir::Value *in : g.inputs()) inputs[in->name()] = randomTensor(in->type(), rng);
  auto expected = interp::runGraph(g, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();

  char dir[] = "/tmp/fusec_gpu_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  auto so = testing::nvccCompile(mod->source, dir, "model", "sm_90", true);
  ASSERT_TRUE(so.ok()) << so.status();
  void *lib = dlopen(so->c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();

  // Device memory for every Value a step names; views alias their root.
  std::map<const ir::Value *, void *> dev;
  std::vector<void *> allocations;
  std::function<void *(const ir::Value *)> ptr = [&](const ir::Value *v) -> void * {
    auto it = dev.find(v);
    if (it != dev.end()) return it->second;
    void *p = nullptr;
    if (v->producer() && isViewNode(*v->producer()) && !v->producer()->hasAttr("fusec.kernel")) {
      p = ptr(v->producer()->input(0));
    } else {
      const int64_t bytes = std::max<int64_t>(
          1, v->type().numElements().value_or(0) * ir::dtypeSize(v->type().dtype));
      EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
      allocations.push_back(p);
      cudaMemset(p, 0xff, bytes);  // NaN for floats
      const ir::Tensor *host = v->isConstant() ? v->constant() : nullptr;
      auto in = inputs.find(v->name());
      bool isInput = false;
      for (const ir::Value *gi : g.inputs()) isInput |= gi == v;
      if (isInput && in != inputs.end()) host = &in->second;
      if (host) cudaMemcpy(p, host->data(), host->byteSize(), cudaMemcpyHostToDevice);
    }
    dev[v] = p;
    return p;
  };
  for (const Step &s : mod->steps) {
    ASSERT_EQ(s.kind, Step::Kind::kKernel) << "unexpected library step " << s.name;
    std::vector<void *> args;
    for (const ir::Value *v : s.buffers) args.push_back(ptr(v));
    using Launcher = int (*)(void *const *, cudaStream_t);
    auto fn = reinterpret_cast<Launcher>(dlsym(lib, s.symbol.c_str()));
    ASSERT_NE(fn, nullptr) << s.symbol;
    ASSERT_EQ(fn(args.data(), nullptr), 0) << s.name;
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::Value *o = g.outputs()[i];
    ir::Tensor actual(o->type().dtype, o->type().staticShape());
    ASSERT_EQ(cudaMemcpy(actual.data(), ptr(o), actual.byteSize(), cudaMemcpyDeviceToHost), cudaSuccess);
    interp::Tolerance tol = interp::defaultTolerance(o->type().dtype);
    if (o->type().dtype == ir::DType::kBF16) tol = {2e-2, 2e-2};
    if (o->type().dtype == ir::DType::kF32) tol = {2e-5, 1e-4};
    interp::CompareResult r = interp::compareTensors(actual, (*expected)[i], &tol);
    EXPECT_TRUE(r.pass) << c.name << " output " << o->name() << ": " << r.message;
  }
  for (void *p : allocations) cudaFree(p);
  dlclose(lib);
  std::system(absl::StrCat("rm -rf ", dir).c_str());
#endif
}

INSTANTIATE_TEST_SUITE_P(Corpus, GpuRunTest, ::testing::ValuesIn(testing::corpus()),
                         [](const ::testing::TestParamInfo<testing::Case> &i) { return i.param.name; });

}  // namespace
}  // namespace fusec::codegen
