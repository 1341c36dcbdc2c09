//===- Profile.h - Per-step timing report of a profiled artifact run -===//
//
// With profiling on (FUSERT_PROFILE=1 or fusert_enable_profiling), fusert_run
// times every step with CUDA events and hands the microseconds to a
// StepProfile. This file holds everything about that which needs no GPU: the
// static cost of a step (bytes its buffers hold, FLOPs of a gemm or conv),
// the median, and the JSON report, so all of it is testable on a CPU-only
// machine.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_INTERNAL_PROFILE_H
#define FUSEC_RUNTIME_INTERNAL_PROFILE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/internal/Manifest.h"

namespace fusec::rt {

/// What one step moves and computes, from the manifest alone.
struct StepCost {
  /// Bytes of the step's distinct buffers (each counted once): kernel
  /// `buffers`; gemm a, b, c, d, bias; conv x, w, bias, y. A copy counts its
  /// bytes twice (read + written). A lower bound on DRAM traffic, in bytes.
  uint64_t bytes = 0;
  /// Floating-point operations: 2·m·n·k·batch for a gemm, 2·|y|·(C/group)·
  /// kernel area for a conv (multiply and add counted apart), 0 otherwise.
  double flops = 0;
};

/// \returns the static cost of \p step of \p m (a checked manifest).
StepCost stepCost(const Manifest &m, const StepDesc &step);

/// \returns the manifest name of \p kind: "kernel", "gemm", "conv", "copy".
const char *stepKindName(StepKind kind);

/// \returns the median of \p values (mean of the middle two for an even
/// count), 0 for an empty list.
double median(std::vector<float> values);

/// Per-step time samples, in microseconds, one per profiled run.
class StepProfile {
public:
  /// Drops all samples and sizes the profile for \p numSteps steps.
  void reset(size_t numSteps);
  /// Appends one run's times; \p stepUs has one entry per step (ignored if
  /// its size differs from the step count given to reset).
  void addRun(const std::vector<float> &stepUs);
  /// \returns the number of runs recorded since the last reset.
  size_t runs() const { return runs_; }
  /// \returns the samples of step \p i.
  const std::vector<float> &samples(size_t i) const { return samples_[i]; }
  size_t numSteps() const { return samples_.size(); }

private:
  std::vector<std::vector<float>> samples_;
  size_t runs_ = 0;
};

/// Formats the report of \p profile for manifest \p m as one JSON object:
///   {"model": NAME, "runs": N, "total_us": SUM_OF_MEDIANS,
///    "steps": [{"index": I, "name": S, "kind": K, "median_us": T,
///               "min_us": T, "bytes": B, "flops": F}, ...]}
/// in step order (times 0 when no run was recorded). Steps of \p m beyond
/// the profile's step count report no samples.
std::string formatProfileJson(const Manifest &m, const StepProfile &profile);

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_INTERNAL_PROFILE_H
