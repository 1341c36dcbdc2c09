//===- CpuArtifactRunner.h - Runs a cpu artifact's steps serially -*- C++ -*-===//
//
// A test-only executor of `fusec --target cpu` artifacts, independent of
// libfusert: reads manifest.json, maps weights.bin, dlopens the library,
// lays out the buffers (inputs, outputs, weights, arena, aliases; every
// arena buffer poisoned with NaN bytes first, so that elements a kernel
// forgets to write show), and calls each kernel step's entry point with a
// test fusert_cpu_context: a parallel_for over std::threads (or serial)
// and a naive sgemm. Copy steps are memcpy.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_CPU_CPUARTIFACTRUNNER_H
#define FUSEC_TEST_UNIT_CPU_CPUARTIFACTRUNNER_H

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ir/Tensor.h"
#include "nlohmann/json.hpp"
#include "runtime/include/fusert/fusert_cpu_kernel.h"

namespace fusec::testing::cpu {

inline void serialParallelFor(void *, int64_t n, int64_t grain, fusert_cpu_range_fn fn, void *closure) {
  for (int64_t b = 0; b < n; b += grain) fn(closure, b, std::min(n, b + grain), 0);
}

/// Chunks of `grain` dealt round-robin to up to pool-size threads.
struct ThreadPool {
  int threads = 3;
};
inline void threadParallelFor(void *pool, int64_t n, int64_t grain, fusert_cpu_range_fn fn, void *closure) {
  const int t = static_cast<ThreadPool *>(pool)->threads;
  if (n <= 0) return;
  std::vector<std::thread> ws;
  for (int i = 0; i < t; ++i)
    ws.emplace_back([=] {
      for (int64_t b = i * grain; b < n; b += grain * t) fn(closure, b, std::min(n, b + grain), i);
    });
  for (auto &w : ws) w.join();
}

inline void naiveSgemm(int32_t ta, int32_t tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                       int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += static_cast<double>(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      float r = alpha * static_cast<float>(s);
      c[i * ldc + j] = beta == 0 ? r : r + beta * c[i * ldc + j];
    }
}

struct AlignedBuf {
  void *p = nullptr;
  explicit AlignedBuf(size_t bytes) { p = std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64)); }
  ~AlignedBuf() { std::free(p); }
  AlignedBuf(const AlignedBuf &) = delete;
  AlignedBuf &operator=(const AlignedBuf &) = delete;
};

/// Runs the artifact in \p dir on \p feeds (by manifest input name);
/// \returns the outputs in manifest order. \p threads 0 = serial parallel_for.
inline absl::StatusOr<std::vector<ir::Tensor>> runCpuArtifact(const std::string &dir,
                                                              const std::map<std::string, ir::Tensor> &feeds,
                                                              int threads = 0) {
  namespace fs = std::filesystem;
  using Json = nlohmann::json;
  std::ifstream mf(fs::path(dir) / "manifest.json");
  Json m = Json::parse(mf, nullptr, false);
  if (!m.is_object()) return absl::InvalidArgumentError("bad manifest");
  if (m.value("target", "") != "cpu") return absl::InvalidArgumentError("not a cpu artifact");
  // Weights.
  std::string weights;
  if (m.contains("weights")) {
    std::ifstream wf(fs::path(dir) / m["weights"]["file"].get<std::string>(), std::ios::binary);
    weights.assign(std::istreambuf_iterator<char>(wf), std::istreambuf_iterator<char>());
  }
  AlignedBuf wbuf(weights.size());
  if (!weights.empty()) std::memcpy(wbuf.p, weights.data(), weights.size());
  const int64_t arenaBytes = m.value("arena_bytes", int64_t{0});
  AlignedBuf arena(arenaBytes);
  if (arenaBytes > 0) std::memset(arena.p, 0xff, arenaBytes);  // NaN in every float format
  const Json &bufs = m["buffers"];
  std::vector<std::unique_ptr<AlignedBuf>> outBufs;
  std::vector<void *> addr(bufs.size(), nullptr);
  std::vector<int64_t> bytes(bufs.size(), 0);
  std::vector<AlignedBuf *> outIdx(m["outputs"].size(), nullptr);
  std::vector<std::unique_ptr<AlignedBuf>> inCopies;
  for (size_t i = 0; i < bufs.size(); ++i) {
    const Json &b = bufs[i];
    bytes[i] = b["bytes"].get<int64_t>();
    const std::string st = b["storage"];
    if (st == "input") {
      const size_t k = b["index"].get<size_t>();
      const std::string name = m["inputs"][k]["name"];
      auto it = feeds.find(name);
      if (it == feeds.end()) return absl::InvalidArgumentError("missing input " + name);
      if (static_cast<int64_t>(it->second.byteSize()) != bytes[i])
        return absl::InvalidArgumentError(absl::StrCat("input ", name, " has ", it->second.byteSize(), " bytes, want ", bytes[i]));
      inCopies.push_back(std::make_unique<AlignedBuf>(bytes[i]));
      // memcpy with a null pointer is undefined even for 0 bytes (an empty input).
      if (bytes[i] > 0) std::memcpy(inCopies.back()->p, it->second.data(), bytes[i]);
      addr[i] = inCopies.back()->p;
    } else if (st == "output") {
      outBufs.push_back(std::make_unique<AlignedBuf>(bytes[i]));
      if (bytes[i] > 0) std::memset(outBufs.back()->p, 0xff, bytes[i]);
      addr[i] = outBufs.back()->p;
      outIdx[b["index"].get<size_t>()] = outBufs.back().get();
    } else if (st == "weight") {
      addr[i] = static_cast<char *>(wbuf.p) + b["offset"].get<int64_t>();
    } else if (st == "arena") {
      addr[i] = static_cast<char *>(arena.p) + b["offset"].get<int64_t>();
    }
  }
  for (size_t i = 0; i < bufs.size(); ++i)  // aliases (chains resolve in order of definition)
    for (size_t j = 0; j < bufs.size(); ++j)
      if (bufs[j]["storage"] == "alias" && addr[bufs[j]["of"].get<int>()])
        addr[j] = static_cast<char *>(addr[bufs[j]["of"].get<int>()]) + bufs[j]["offset"].get<int64_t>();
  void *lib = nullptr;
  if (m.contains("library")) {
    lib = ::dlopen((fs::path(dir) / m["library"].get<std::string>()).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) return absl::InternalError(absl::StrCat("dlopen: ", ::dlerror()));
  }
  const uint64_t ws = m.value("workspace_bytes_per_thread", uint64_t{0});
  ThreadPool pool;
  pool.threads = threads > 0 ? threads : 1;
  AlignedBuf wsbuf(ws * pool.threads);
  fusert_cpu_context ctx{};
  ctx.abi_version = FUSERT_CPU_ABI_VERSION;
  ctx.num_threads = pool.threads;
  ctx.pool = &pool;
  ctx.parallel_for = threads > 0 ? threadParallelFor : serialParallelFor;
  ctx.sgemm = naiveSgemm;
  ctx.workspace = ws ? wsbuf.p : nullptr;
  ctx.workspace_bytes_per_thread = ws;
  absl::Status status;
  for (const Json &s : m["steps"]) {
    const std::string kind = s["kind"];
    if (kind == "copy") {
      std::memmove(addr[s["dst"].get<int>()], addr[s["src"].get<int>()], s["bytes"].get<int64_t>());
    } else if (kind == "kernel") {
      auto fn = reinterpret_cast<fusert_cpu_kernel_fn>(::dlsym(lib, s["symbol"].get<std::string>().c_str()));
      if (!fn) {
        status = absl::InternalError(absl::StrCat("no symbol ", s["symbol"].get<std::string>()));
        break;
      }
      std::vector<void *> ptrs;
      for (const Json &b : s["buffers"]) ptrs.push_back(addr[b.get<int>()]);
      if (fn(ptrs.data(), &ctx) != 0) {
        status = absl::InternalError(absl::StrCat("step ", s["name"].get<std::string>(), " failed"));
        break;
      }
    } else {
      status = absl::InvalidArgumentError(absl::StrCat("step kind ", kind, " in a cpu artifact"));
      break;
    }
  }
  std::vector<ir::Tensor> out;
  if (status.ok()) {
    const Json &outs = m["outputs"];
    for (size_t k = 0; k < outs.size(); ++k) {
      const Json &b = bufs[outs[k]["buffer"].get<int>()];
      const std::string dts = outs[k]["dtype"];
      static const std::map<std::string, ir::DType> kNames = {
          {"f32", ir::DType::kF32}, {"f16", ir::DType::kF16}, {"bf16", ir::DType::kBF16}, {"f64", ir::DType::kF64},
          {"i64", ir::DType::kI64}, {"i32", ir::DType::kI32}, {"bool", ir::DType::kBool}, {"u8", ir::DType::kU8},
          {"i8", ir::DType::kI8}, {"i16", ir::DType::kI16}, {"u16", ir::DType::kU16}, {"u32", ir::DType::kU32},
          {"u64", ir::DType::kU64}, {"f8e4m3fn", ir::DType::kF8E4M3FN}, {"f8e4m3fnuz", ir::DType::kF8E4M3FNUZ},
          {"f8e5m2", ir::DType::kF8E5M2}, {"f8e5m2fnuz", ir::DType::kF8E5M2FNUZ}};
      auto it = kNames.find(dts);
      if (it == kNames.end()) {
        status = absl::InvalidArgumentError("output dtype " + dts);
        break;
      }
      ir::Tensor t(it->second, outs[k]["shape"].get<std::vector<int64_t>>());
      const void *src = b["storage"] == "output" ? outIdx[k]->p : addr[outs[k]["buffer"].get<int>()];
      if (t.byteSize() > 0) std::memcpy(t.data(), src, t.byteSize());
      out.push_back(std::move(t));
    }
  }
  if (lib) ::dlclose(lib);
  if (!status.ok()) return status;
  return out;
}

}  // namespace fusec::testing::cpu

#endif  // FUSEC_TEST_UNIT_CPU_CPUARTIFACTRUNNER_H
