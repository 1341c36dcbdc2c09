//===- Model.h - A loaded artifact and the executor interface of its target -===//
//
// libfusert's device-neutral core (Runtime.cpp) owns what every target
// shares: the checked manifest, the dlopened library and its resolved
// kernel symbols, the binding of caller tensors to buffer addresses, the
// step loop and the per-step profile. Everything that touches a device or
// the host's threads is behind Executor, one implementation per manifest
// "target": runtime/cuda/CudaExecutor.cpp ("cuda") and runtime/cpu/
// CpuExecutor.cpp ("cpu").
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_RUNTIME_INTERNAL_MODEL_H
#define FUSEC_RUNTIME_INTERNAL_MODEL_H

#include <memory>
#include <string>
#include <vector>

#include "fusert/fusert.h"
#include "runtime/internal/Manifest.h"
#include "runtime/internal/Profile.h"
#include "runtime/internal/Status.h"

namespace fusec::rt {

class Executor;

/// \returns \p file itself if absolute, else \p dir / \p file.
std::string joinPath(const std::string &dir, const std::string &file);

/// \returns true and the size of regular file \p path in \p size.
bool fileSize(const std::string &path, uint64_t &size);

} // namespace fusec::rt

/// A loaded artifact (the opaque handle of fusert.h).
struct fusert_model {
  std::string dir;
  fusec::rt::Manifest manifest;
  void *library = nullptr;      ///< dlopen handle of manifest.library
  std::vector<void *> symbols;  ///< per step: its kernel symbol, else nullptr
  std::unique_ptr<fusec::rt::Executor> exec;
  std::vector<void *> addr;     ///< per buffer (file order): address this run

  /// Whether any step has a guard (an If chosen at run time).
  bool hasGuards = false;
  /// Per buffer (file order) during a run: -1 not read yet, else the value
  /// of a guard condition read this run. Sized at load; runs allocate nothing.
  std::vector<signed char> guardValue;

  /// Dynamic shapes: the symbol values the manifest's shapes are evaluated
  /// for (empty: none bound yet, or a static artifact).
  std::vector<int64_t> boundSymbols;
  /// Binds the symbols from \p inputs' shapes (fusert_bind_shapes,
  /// fusert_run): on a new binding re-evaluates the manifest's shapes and
  /// arena plan and lets the executor grow its arena. No-op for a static
  /// artifact.
  fusec::rt::Status bindShapes(const fusert_tensor *inputs, size_t numInputs);

  // Profiling (fusert_enable_profiling).
  bool profile = false;
  fusec::rt::StepProfile profSamples;

  ~fusert_model();

  /// Sets addr[i] for every buffer from the bound caller pointers \p in /
  /// \p out (manifest input/output order) and the executor's weights and
  /// arena. Aliases are followed through their (checked acyclic) chain.
  void resolveAll(const std::vector<void *> &in, const std::vector<void *> &out);
  /// \returns the address of buffer \p id this run (nullptr for id < 0).
  void *at(int id) const { return id < 0 ? nullptr : addr[manifest.bufferIndex(id)]; }

  /// The shared step loop: runs every step in order through the executor,
  /// each error prefixed with "step I 'NAME'". With \p timed, the executor
  /// marks the time before each step and after the last. A step with a
  /// guard runs only when it holds (Executor::readGuard, each condition
  /// buffer read at most once per run, the terms in order; a step whose
  /// guard fails is skipped, its time mark still taken).
  fusec::rt::Status runSteps(cudaStream_t stream, bool timed);
  /// runSteps(timed) and then adds the executor's step times to profSamples.
  fusec::rt::Status runProfiled(cudaStream_t stream);
};

namespace fusec::rt {

/// What a target does; one instance per loaded model. Calls come from one
/// thread at a time (docs/RUNTIME.md, "Threads and streams").
class Executor {
public:
  virtual ~Executor() = default;

  /// Checks, before any file is opened, that this build and host can run
  /// \p m (e.g. conv steps need cuDNN; a cpu artifact's cpu_features).
  virtual Status checkRunnable(const Manifest &m) = 0;
  /// Allocates and fills the weights, allocates the arena and whatever the
  /// steps need. The manifest is checked, the library loaded and the
  /// weights file's size verified; \p weightsPath is "" if there is none.
  virtual Status prepare(fusert_model &model, const std::string &weightsPath) = 0;

  /// Base addresses of the weights and the arena (nullptr when empty).
  virtual char *weights() const = 0;
  virtual char *arena() const = 0;

  /// Runs the model once: model.addr is resolved; normally calls
  /// model.runSteps or model.runProfiled (when model.profile is set).
  virtual Status run(fusert_model &model, const std::vector<void *> &in,
                     const std::vector<void *> &out, cudaStream_t stream) = 0;
  /// Runs step \p i of the manifest with model.addr.
  virtual Status runStep(fusert_model &model, size_t i, cudaStream_t stream) = 0;
  /// Reads the one-byte bool at \p addr (a guard condition, model.addr of
  /// its buffer) once what the steps enqueued before it on \p stream have
  /// written it: cpu reads host memory; cuda copies the byte to the host
  /// and synchronises \p stream. \p value is set to byte != 0.
  virtual Status readGuard(const void *addr, cudaStream_t stream, bool &value) = 0;

  /// Sets every byte of the arena to \p byteValue (0..255, checked).
  virtual Status fillArena(int byteValue, cudaStream_t stream) = 0;

  /// Prepares (on) or drops (off) the step timers for \p numSteps steps.
  virtual Status enableProfiling(bool on, size_t numSteps) = 0;
  /// Marks the time before step \p i (i == number of steps: after the last).
  virtual Status markTime(size_t i, cudaStream_t stream) = 0;
  /// Waits for the timed run and \returns each step's time in microseconds.
  virtual Status stepTimes(std::vector<float> &us, cudaStream_t stream) = 0;

  /// CUDA graphs (cuda only; a no-op elsewhere).
  virtual void setCudaGraph(bool on) { (void)on; }
  /// Thread pool size (cpu only; a no-op returning OK elsewhere; 0 = default).
  virtual Status setNumThreads(int n) {
    (void)n;
    return Status();
  }
  /// Dynamic shapes: the runs from now on bind \p symbols (manifest order;
  /// model.manifest is already evaluated for them) and need an arena of
  /// \p arenaBytes; grows the arena when it is smaller (its contents are not
  /// kept) and prepares what the steps need for this binding. Called only
  /// when the binding changes, before resolveAll. Executors without
  /// dynamic shapes refuse.
  virtual Status bindShapes(fusert_model &model, const std::vector<int64_t> &symbols,
                            uint64_t arenaBytes) {
    (void)model;
    (void)symbols;
    (void)arenaBytes;
    return invalidArgument("this target does not run dynamic shapes");
  }
  /// \returns the thread pool size, 0 without one.
  virtual int numThreads() const { return 0; }
};

/// The executor of target "cuda"; an error when libfusert was built without
/// CUDA (runtime/cuda/CudaExecutor.cpp or runtime/cuda/NoCuda.cpp).
Status makeCudaExecutor(std::unique_ptr<Executor> &out);
/// The executor of target "cpu" (runtime/cpu/CpuExecutor.cpp).
Status makeCpuExecutor(std::unique_ptr<Executor> &out);

} // namespace fusec::rt

#endif // FUSEC_RUNTIME_INTERNAL_MODEL_H
