//===- CpuFeatures.h - ISA features a cpu artifact needs, and the host's -===//
//
// A cpu artifact's manifest lists the ISA features its code uses
// ("cpu_features", in LLVM's spelling: "avx2", "fma", "avx512bw", ...). The
// manifest checker refuses a name not in the table below (a typo or a
// feature this runtime cannot test for must not be waved through), and the
// loader refuses to run on a host that lacks one, naming it, instead of the
// process dying on SIGILL in the first kernel.
//
// The host is queried with the CPUID instruction (Intel SDM vol. 2A, CPUID;
// AMD APM vol. 3, appendix E) and, for the AVX and AVX-512 families, XGETBV:
// a feature counts only when the OS also saves its register state (XCR0 bits
// 1-2 for AVX, 5-7 for AVX-512), the rule the Intel SDM vol. 1 section 14.3
// gives. Non-x86 hosts report every feature as missing.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_CPU_CPUFEATURES_H
#define FUSEC_RUNTIME_CPU_CPUFEATURES_H

#include <string>

namespace fusec::rt {

/// \returns true if \p name (LLVM spelling, e.g. "sse4.2", "avx512bf16") is
/// a feature this runtime can check.
bool isKnownCpuFeature(const std::string &name);

/// \returns the known feature names, comma-separated (for error messages).
std::string knownCpuFeatures();

/// \returns true if this host (CPU and OS) supports known feature \p name;
/// false for an unknown name.
bool hostHasCpuFeature(const std::string &name);

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_CPU_CPUFEATURES_H
