//===- GpuRun.h - fusec-run OUT --data DIR: run a cuda or cpu artifact -*- C++ -*-===//
//
// Loads a fusec artifact (docs/ARTIFACT.md) with libfusert (a cuda artifact
// on the current CUDA device, a cpu artifact on the host: the manifest's
// "target" decides), feeds it
// DIR/input_<i>.pb, compares its outputs with DIR/output_<i>.pb (the ONNX
// backend-test layout) and prints, like `fusec-run --reference`, one line per
// output and a final line starting with PASS or FAIL. Inputs are matched to
// the manifest's inputs by tensor name, else by position; no dtype
// conversion is done (dtype and shape must equal the manifest's).
//
// Unless poison is false, the checked run starts from poisoned memory: the
// output buffers and the artifact's activation arena are filled with 0xFF
// bytes (NaN in every float dtype, fusert_fill_arena), so an element that no
// step writes, or a step that reads an intermediate before it is written,
// shows as a mismatch instead of passing by luck. (compute-sanitizer's
// initcheck needs poison off: the fill counts as initialisation.)
//
// With benchIters > 0 it then times the model: 10 warm-up runs, then
// benchIters runs, and prints "latency ms: p50 X p90 Y p99 Z (N runs after
// 10 warm-up, MODE)". cuda: each run timed with CUDA events on one stream
// with CUDA graphs on, MODE "CUDA graph". cpu: each fusert_run (synchronous)
// timed with std::chrono::steady_clock, on the model's default thread pool
// (FUSERT_NUM_THREADS, else every hardware thread), MODE "cpu, T threads".
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TOOLS_FUSEC_RUN_GPURUN_H
#define FUSEC_TOOLS_FUSEC_RUN_GPURUN_H

#include <string>

namespace fusec::tools {

/// True when this build has libfusert (fusec_runtime); otherwise
/// runArtifact only reports that.
bool gpuRunAvailable();

/// Runs the artifact in \p artifactDir (cuda: on the current CUDA device;
/// cpu: on the host) against \p dataDir; see the file comment. \p atol / \p rtol < 0 select the
/// per-dtype defaults of interp/Compare.h. Output goes to stdout, errors to
/// stderr ("fusec-run: error: ...") plus a FAIL line on stdout.
/// \returns the exit status: 0 on PASS, 1 on FAIL or any error (no CUDA
/// device for a cuda artifact, load failure, missing or mismatched data,
/// run failure).
int runArtifact(const std::string &artifactDir, const std::string &dataDir, int benchIters,
                double atol = -1, double rtol = -1, bool poison = true);

}  // namespace fusec::tools

#endif  // FUSEC_TOOLS_FUSEC_RUN_GPURUN_H
