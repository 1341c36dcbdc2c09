//===- CpuFeatures.cpp - ISA features a cpu artifact needs, and the host's -===//
#include "runtime/cpu/CpuFeatures.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define FUSERT_X86 1
#endif

namespace fusec::rt {
namespace {

/// Where CPUID reports a feature: leaf, subleaf, register, bit, and which OS
/// register state (XCR0 mask) it needs.
enum Reg { kEax, kEbx, kEcx, kEdx };
constexpr uint64_t kNoState = 0;
constexpr uint64_t kAvxState = 0x6;     ///< XCR0: SSE and AVX (YMM) state
constexpr uint64_t kAvx512State = 0xE6; ///< + opmask, ZMM_Hi256, Hi16_ZMM

struct Feature {
  const char *name; ///< LLVM's spelling
  uint32_t leaf, subleaf;
  Reg reg;
  int bit;
  uint64_t state;
};

// Bit positions: Intel SDM vol. 2A, CPUID, tables 3-10, 3-11 and 3-8
// (leaf 0x80000001).
constexpr Feature kFeatures[] = {
    {"cmov", 1, 0, kEdx, 15, kNoState},
    {"cx8", 1, 0, kEdx, 8, kNoState},
    {"mmx", 1, 0, kEdx, 23, kNoState},
    {"fxsr", 1, 0, kEdx, 24, kNoState},
    {"sse", 1, 0, kEdx, 25, kNoState},
    {"sse2", 1, 0, kEdx, 26, kNoState},
    {"sse3", 1, 0, kEcx, 0, kNoState},
    {"pclmul", 1, 0, kEcx, 1, kNoState},
    {"ssse3", 1, 0, kEcx, 9, kNoState},
    {"fma", 1, 0, kEcx, 12, kAvxState},
    {"cx16", 1, 0, kEcx, 13, kNoState},
    {"sse4.1", 1, 0, kEcx, 19, kNoState},
    {"sse4.2", 1, 0, kEcx, 20, kNoState},
    {"crc32", 1, 0, kEcx, 20, kNoState},
    {"movbe", 1, 0, kEcx, 22, kNoState},
    {"popcnt", 1, 0, kEcx, 23, kNoState},
    {"aes", 1, 0, kEcx, 25, kNoState},
    {"xsave", 1, 0, kEcx, 26, kNoState},
    {"avx", 1, 0, kEcx, 28, kAvxState},
    {"f16c", 1, 0, kEcx, 29, kAvxState},
    {"rdrnd", 1, 0, kEcx, 30, kNoState},
    {"fsgsbase", 7, 0, kEbx, 0, kNoState},
    {"bmi", 7, 0, kEbx, 3, kNoState},
    {"avx2", 7, 0, kEbx, 5, kAvxState},
    {"bmi2", 7, 0, kEbx, 8, kNoState},
    {"avx512f", 7, 0, kEbx, 16, kAvx512State},
    {"avx512dq", 7, 0, kEbx, 17, kAvx512State},
    {"rdseed", 7, 0, kEbx, 18, kNoState},
    {"adx", 7, 0, kEbx, 19, kNoState},
    {"avx512ifma", 7, 0, kEbx, 21, kAvx512State},
    {"clflushopt", 7, 0, kEbx, 23, kNoState},
    {"clwb", 7, 0, kEbx, 24, kNoState},
    {"avx512cd", 7, 0, kEbx, 28, kAvx512State},
    {"sha", 7, 0, kEbx, 29, kNoState},
    {"avx512bw", 7, 0, kEbx, 30, kAvx512State},
    {"avx512vl", 7, 0, kEbx, 31, kAvx512State},
    {"avx512vbmi", 7, 0, kEcx, 1, kAvx512State},
    {"avx512vbmi2", 7, 0, kEcx, 6, kAvx512State},
    {"gfni", 7, 0, kEcx, 8, kNoState},
    {"vaes", 7, 0, kEcx, 9, kAvxState},
    {"vpclmulqdq", 7, 0, kEcx, 10, kAvxState},
    {"avx512vnni", 7, 0, kEcx, 11, kAvx512State},
    {"avx512bitalg", 7, 0, kEcx, 12, kAvx512State},
    {"avx512vpopcntdq", 7, 0, kEcx, 14, kAvx512State},
    {"avx512fp16", 7, 0, kEdx, 23, kAvx512State},
    {"avxvnni", 7, 1, kEax, 4, kAvxState},
    {"avx512bf16", 7, 1, kEax, 5, kAvx512State},
    {"sahf", 0x80000001u, 0, kEcx, 0, kNoState},
    {"lzcnt", 0x80000001u, 0, kEcx, 5, kNoState},
    {"sse4a", 0x80000001u, 0, kEcx, 6, kNoState},
    {"prfchw", 0x80000001u, 0, kEcx, 8, kNoState},
    {"fma4", 0x80000001u, 0, kEcx, 16, kAvxState},
};

const Feature *find(const std::string &name) {
  for (const Feature &f : kFeatures)
    if (name == f.name)
      return &f;
  return nullptr;
}

#ifdef FUSERT_X86
/// XCR0, or 0 when the OS has not enabled XSAVE (then no AVX state).
uint64_t xcr0() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) // OSXSAVE
    return 0;
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
#endif

} // namespace

bool isKnownCpuFeature(const std::string &name) { return find(name) != nullptr; }

std::string knownCpuFeatures() {
  std::string out;
  for (const Feature &f : kFeatures) {
    if (!out.empty())
      out += ", ";
    out += f.name;
  }
  return out;
}

bool hostHasCpuFeature(const std::string &name) {
  const Feature *f = find(name);
  if (!f)
    return false;
#ifdef FUSERT_X86
  unsigned regs[4] = {0, 0, 0, 0};
  // __get_cpuid_count checks the leaf against the maximum the CPU reports.
  if (!__get_cpuid_count(f->leaf, f->subleaf, &regs[0], &regs[1], &regs[2], &regs[3]))
    return false;
  if (!(regs[f->reg] & (1u << f->bit)))
    return false;
  return (xcr0() & f->state) == f->state;
#else
  return false;
#endif
}

} // namespace fusec::rt
