//===- Runtime.cpp - libfusert's C API: load an artifact and run it -===//
//
// The device-neutral part of the runtime. fusert_load parses and checks the
// manifest, picks the executor of its "target" (runtime/internal/Model.h),
// lets it check that this build and host can run the artifact, verifies the
// checksums, dlopens the library and resolves every kernel symbol and checks
// the weights file, all before anything is allocated; then the executor
// fills the weights and allocates the arena. fusert_run binds the caller's
// tensors, resolves every buffer to an address and hands the run to the
// executor, which goes through the shared step loop (runSteps).
// No exception leaves this file: each API function catches at its boundary.
//
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "fusert/fusert.h"
#include "runtime/ArtifactFormat.h"
#include "runtime/internal/Checksum.h"
#include "runtime/internal/Manifest.h"
#include "runtime/internal/Model.h"
#include "runtime/internal/Profile.h"

using namespace fusec::rt;

namespace {

thread_local std::string tLastError;

fusert_status fail(const Status &s) {
  tLastError = s.message();
  return s.code();
}

/// True when the manifest names a library (cpu, cuda). fusec names one only
/// when a step calls it, and the loader then always loads it and compares the
/// manifest digest it records, whatever the steps are now: a manifest whose
/// kernel steps were removed or replaced by copies is refused like every
/// other edit.
bool usesLibrary(const Manifest &m) { return !m.library.empty(); }

/// The largest library the loader hashes and dlopens (generated kernels of
/// the largest models are tens of MiB).
constexpr uint64_t kMaxLibraryBytes = uint64_t{1} << 30;

/// Checks the manifest's checksums before anything is dlopened or read: the
/// library (when the manifest names one and does not say "library_build":
/// "by hand") and the weights file (when the manifest names one) must each
/// have an entry, since fusec writes one for both (docs/ARTIFACT.md) and a
/// deleted entry would otherwise let a swapped file through; then every
/// listed file's size is checked (the weights' against the manifest, the
/// library's against kMaxLibraryBytes) before its checksum is recomputed and
/// compared. A required file that is missing is FUSERT_NOT_FOUND, a missing
/// entry or a mismatch FUSERT_INVALID_ARGUMENT.
Status verifyChecksums(const fusert_model &model) {
  const Manifest &m = model.manifest;
  auto listed = [&](const std::string &file) {
    return std::any_of(m.checksums.begin(), m.checksums.end(),
                       [&](const auto &entry) { return entry.first == file; });
  };
  struct Required {
    const char *what;
    const std::string &file;
  };
  std::vector<Required> required;
  if (usesLibrary(m) && !m.libraryBuiltByHand) required.push_back({"library", m.library});
  if (!m.weightsFile.empty()) required.push_back({"weights file", m.weightsFile});
  for (const Required &r : required) {
    std::string path = joinPath(model.dir, r.file);
    uint64_t size = 0;
    if (!fileSize(path, size))
      return notFound(r.what, " ", path, " not found");
    if (!listed(r.file))
      return invalidArgument("manifest: 'checksums' has no entry for the ", r.what, " '", r.file,
                             "' (fusec records one for every file it writes): the artifact was "
                             "modified or mixed with another; recompile it");
  }
  for (const auto &[file, want] : m.checksums) {
    std::string path = joinPath(model.dir, file);
    uint64_t size = 0;
    if (!fileSize(path, size))
      return notFound(file, " not found in ", model.dir);
    // Sizes before contents: a 20 GB (sparse) file would otherwise be read in
    // full before the mismatch shows.
    if (file == m.weightsFile && size != m.weightsBytes)
      return invalidArgument("weights file ", path, " has ", size, " bytes, the manifest says ",
                             m.weightsBytes);
    if (file == m.library && size > kMaxLibraryBytes)
      return invalidArgument("library ", path, " has ", size, " bytes, more than the ",
                             kMaxLibraryBytes >> 20, " MiB a fusec library can have");
    std::string got;
    if (!fusec::artifact_checksum::fileChecksum(path, got))
      return invalidArgument("cannot read ", path);
    if (got != want)
      return invalidArgument(path, " does not match the manifest's checksum (", got,
                             " != ", want, "): the artifact was modified or mixed "
                             "with another; recompile it");
  }
  return Status();
}

/// dlopens the library (when the manifest names one) and resolves every
/// kernel step's symbol into model.symbols.
Status loadLibrary(fusert_model &model) {
  const Manifest &m = model.manifest;
  model.symbols.assign(m.steps.size(), nullptr);
  if (!usesLibrary(m))
    return Status();
  std::string path = joinPath(model.dir, m.library);
  uint64_t size = 0;
  if (!fileSize(path, size))
    return notFound("library ", path, " not found");
  model.library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!model.library) {
    const char *err = dlerror();
    return invalidArgument("cannot load ", path, ": ", err ? err : "dlopen failed");
  }
  // The library's own entry in the loader's list: kernel symbols must be
  // defined there (see below).
  struct link_map *own = nullptr;
  if (dlinfo(model.library, RTLD_DI_LINKMAP, &own) != 0 || !own || !own->l_name)
    return invalidArgument("cannot inspect ", path, " after loading it");
  // The library must have been built for this manifest: the kernels trust
  // its buffer sizes, extents and workspace (ArtifactFormat.h).
  {
    const char *symbol = fusec::artifact_format::kManifestDigestSymbol;
    dlerror();
    const void *sym = dlsym(model.library, symbol);
    Dl_info info{};
    if (!sym || !dladdr(sym, &info) || !info.dli_fname || std::strcmp(info.dli_fname, own->l_name) != 0)
      return invalidArgument(m.library, " records no manifest digest ('", symbol,
                             "'): it was not built by this fusec for this artifact; recompile it");
    const std::string recorded(static_cast<const char *>(sym),
                               strnlen(static_cast<const char *>(sym), 24));
    if (recorded != m.digest)
      return invalidArgument(m.library, " was built for another manifest (it records ",
                             fusec::artifact_checksum::isChecksumText(recorded) ? recorded
                                                                                 : std::string("no valid digest"),
                             ", this manifest's digest is ", m.digest,
                             "): the manifest was edited or mixed with another artifact's; recompile it");
  }
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const StepDesc &s = m.steps[i];
    if (s.kind != StepKind::kKernel)
      continue;
    dlerror();
    void *sym = dlsym(model.library, s.symbol.c_str());
    if (!sym)
      return notFound("step ", i, " '", s.name, "': symbol '", s.symbol, "' not found in ",
                      m.library);
    // dlsym on the library's handle also finds the libraries it depends on
    // (libc's "abort", "printf"): a kernel symbol must be defined by the
    // artifact's library itself.
    Dl_info info{};
    if (!dladdr(sym, &info) || !info.dli_fname || std::strcmp(info.dli_fname, own->l_name) != 0)
      return invalidArgument("step ", i, " '", s.name, "': symbol '", s.symbol,
                             "' is not defined by ", m.library);
    model.symbols[i] = sym;
  }
  return Status();
}

/// \returns the path of the weights file after checking its size, "" when
/// the artifact has none.
Status checkWeightsFile(const fusert_model &model, std::string &path) {
  path.clear();
  const Manifest &m = model.manifest;
  if (m.weightsFile.empty())
    return Status();
  std::string p = joinPath(model.dir, m.weightsFile);
  uint64_t size = 0;
  if (!fileSize(p, size))
    return notFound("weights file ", p, " not found");
  if (size != m.weightsBytes)
    return invalidArgument("weights file ", p, " has ", size, " bytes, the manifest says ",
                           m.weightsBytes);
  path = p;
  return Status();
}

/// Picks the executor of the manifest's target.
Status makeExecutor(const Manifest &m, std::unique_ptr<Executor> &out) {
  if (m.target.empty() || m.target == "cuda")
    return makeCudaExecutor(out);
  if (m.target == "cpu")
    return makeCpuExecutor(out);
  if (m.target == "nki")
    return invalidArgument("manifest: target 'nki': libfusert runs cuda and cpu artifacts; "
                           "an nki artifact runs through its run.py (fusec-run OUT --data DIR "
                           "does that)");
  return invalidArgument("manifest: unknown target '", m.target,
                         "' (libfusert runs 'cuda' and 'cpu' artifacts)");
}

Status loadModel(fusert_model &model) {
  FUSERT_RETURN_IF_ERROR(loadManifestFile(joinPath(model.dir, "manifest.json"), model.manifest));
  FUSERT_RETURN_IF_ERROR(makeExecutor(model.manifest, model.exec));
  FUSERT_RETURN_IF_ERROR(model.exec->checkRunnable(model.manifest));
  FUSERT_RETURN_IF_ERROR(verifyChecksums(model));
  FUSERT_RETURN_IF_ERROR(loadLibrary(model));
  std::string weightsPath;
  FUSERT_RETURN_IF_ERROR(checkWeightsFile(model, weightsPath));
  model.profSamples.reset(model.manifest.steps.size());
  for (const StepDesc &s : model.manifest.steps)
    if (!s.guard.empty())
      model.hasGuards = true;
  model.guardValue.assign(model.manifest.buffers.size(), -1);
  // Everything above needs no device; the executor allocates from here on.
  FUSERT_RETURN_IF_ERROR(model.exec->prepare(model, weightsPath));
  const char *env = std::getenv("FUSERT_PROFILE");
  if (env && std::strcmp(env, "1") == 0) {
    FUSERT_RETURN_IF_ERROR(model.exec->enableProfiling(true, model.manifest.steps.size()));
    model.profile = true;
  }
  return Status();
}

/// Runs \p body, turning any escaping exception into FUSERT_INTERNAL.
template <typename F> fusert_status guarded(F &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(internalError("out of host memory"));
  } catch (const std::exception &e) {
    return fail(internalError("unexpected exception: ", e.what()));
  } catch (...) {
    return fail(internalError("unexpected exception"));
  }
}

fusert_status tensorInfo(const fusert_model *model, size_t index, bool input,
                         const char **name, fusert_dtype *dtype, int *rank,
                         const int64_t **shape) {
  if (!model)
    return fail(invalidArgument("model is NULL"));
  const auto &list = input ? model->manifest.inputs : model->manifest.outputs;
  if (index >= list.size())
    return fail(invalidArgument(input ? "input" : "output", " index ", index,
                                " out of range (model has ", list.size(), ")"));
  const TensorDesc &t = list[index];
  if (name)
    *name = t.name.c_str();
  if (dtype)
    *dtype = t.dtype;
  if (rank)
    *rank = static_cast<int>(t.shape.size());
  // Dynamic shapes: inputs show -1 for their symbolic dims; outputs too
  // until a binding (fusert_bind_shapes, fusert_run), then its dims.
  const bool declared = model->manifest.dynamic() && (input || model->boundSymbols.empty());
  if (shape)
    *shape = declared ? t.declared.data() : t.shape.data();
  return FUSERT_OK;
}

} // namespace

namespace fusec::rt {

std::string joinPath(const std::string &dir, const std::string &file) {
  if (!file.empty() && file[0] == '/')
    return file;
  // An empty folder is the current directory, spelled with a slash: dlopen
  // of a bare "libmodel.so" searches LD_LIBRARY_PATH and the system folders
  // instead, so fusert_load("") hashed ./libmodel.so and then loaded (and
  // ran the constructors of) whatever libmodel.so the search found first.
  if (dir.empty())
    return "./" + file;
  return dir.back() == '/' ? dir + file : dir + "/" + file;
}

bool fileSize(const std::string &path, uint64_t &size) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return false;
  size = static_cast<uint64_t>(st.st_size);
  return true;
}

} // namespace fusec::rt

fusert_model::~fusert_model() {
  exec.reset(); // the executor's state (plans, threads) goes before the library
  if (library)
    dlclose(library);
}

Status fusert_model::bindShapes(const fusert_tensor *inputs, size_t numInputs) {
  if (!manifest.dynamic())
    return Status();
  std::vector<int64_t> values;
  FUSERT_RETURN_IF_ERROR(bindSymbols(manifest, inputs, numInputs, values));
  if (values == boundSymbols)
    return Status();
  // Until both succeed the manifest holds no valid binding: a failed one
  // must not pass for the previous binding at the next run.
  boundSymbols.clear();
  FUSERT_RETURN_IF_ERROR(applyBinding(manifest, values));
  FUSERT_RETURN_IF_ERROR(exec->bindShapes(*this, values, manifest.arenaBytes));
  boundSymbols = std::move(values);
  return Status();
}

void fusert_model::resolveAll(const std::vector<void *> &in, const std::vector<void *> &out) {
  addr.resize(manifest.buffers.size());
  char *weights = exec->weights(), *arena = exec->arena();
  // An alias is its target's address plus its offset, through the chain
  // (checked acyclic by checkManifest); no allocation per run.
  auto resolve = [&](size_t i, auto &self) -> char * {
    const BufferDesc &b = manifest.buffers[i];
    switch (b.storage) {
    case Storage::kInput:
      return static_cast<char *>(in[b.index]);
    case Storage::kOutput:
      return static_cast<char *>(out[b.index]);
    case Storage::kWeight:
      return weights ? weights + b.offset : nullptr;
    case Storage::kArena:
      return arena ? arena + b.offset : nullptr;
    case Storage::kAlias: {
      char *base = self(static_cast<size_t>(manifest.bufferIndex(b.of)), self);
      return base ? base + b.offset : nullptr;
    }
    }
    return nullptr;
  };
  for (size_t i = 0; i < addr.size(); ++i)
    addr[i] = resolve(i, resolve);
}

Status fusert_model::runSteps(cudaStream_t stream, bool timed) {
  if (hasGuards)
    std::fill(guardValue.begin(), guardValue.end(), static_cast<signed char>(-1));
  for (size_t i = 0; i < manifest.steps.size(); ++i) {
    if (timed)
      FUSERT_RETURN_IF_ERROR(exec->markTime(i, stream));
    bool holds = true;
    for (const GuardDesc &t : manifest.steps[i].guard) {
      const int b = manifest.bufferIndex(t.buffer);
      if (guardValue[b] < 0) {
        bool v = false;
        Status read = exec->readGuard(addr[b], stream, v);
        if (!read.ok())
          return read.withContext(strCat("step ", i, " '", manifest.steps[i].name,
                                         "': reading its guard buffer ", t.buffer));
        guardValue[b] = v ? 1 : 0;
      }
      if ((guardValue[b] != 0) != t.when) {
        holds = false;
        break;
      }
    }
    if (!holds)
      continue;
    Status status = exec->runStep(*this, i, stream);
    if (!status.ok())
      return status.withContext(strCat("step ", i, " '", manifest.steps[i].name, "'"));
  }
  if (timed)
    FUSERT_RETURN_IF_ERROR(exec->markTime(manifest.steps.size(), stream));
  return Status();
}

Status fusert_model::runProfiled(cudaStream_t stream) {
  FUSERT_RETURN_IF_ERROR(runSteps(stream, /*timed=*/true));
  std::vector<float> us;
  FUSERT_RETURN_IF_ERROR(exec->stepTimes(us, stream));
  profSamples.addRun(us);
  return Status();
}

extern "C" {

const char *fusert_last_error(void) { return tLastError.c_str(); }

const char *fusert_status_name(fusert_status status) {
  switch (status) {
  case FUSERT_OK:
    return "FUSERT_OK";
  case FUSERT_INVALID_ARGUMENT:
    return "FUSERT_INVALID_ARGUMENT";
  case FUSERT_NOT_FOUND:
    return "FUSERT_NOT_FOUND";
  case FUSERT_CUDA_ERROR:
    return "FUSERT_CUDA_ERROR";
  case FUSERT_CUBLAS_ERROR:
    return "FUSERT_CUBLAS_ERROR";
  case FUSERT_CUDNN_ERROR:
    return "FUSERT_CUDNN_ERROR";
  case FUSERT_INTERNAL:
    return "FUSERT_INTERNAL";
  }
  return "FUSERT_UNKNOWN_STATUS";
}

fusert_status fusert_load(const char *artifact_dir, fusert_model **out) {
  return guarded([&] {
    if (!out)
      return fail(invalidArgument("fusert_load: out is NULL"));
    *out = nullptr;
    if (!artifact_dir)
      return fail(invalidArgument("fusert_load: artifact_dir is NULL"));
    auto model = std::make_unique<fusert_model>();
    model->dir = artifact_dir;
    Status status = loadModel(*model);
    if (!status.ok())
      return fail(status);
    *out = model.release();
    return FUSERT_OK;
  });
}

void fusert_unload(fusert_model *model) {
  try {
    const char *path = std::getenv("FUSERT_PROFILE_JSON");
    if (model && model->profile && path && *path && model->profSamples.runs() > 0) {
      std::ofstream f(path, std::ios::trunc);
      f << formatProfileJson(model->manifest, model->profSamples) << "\n";
      if (!f)
        std::fprintf(stderr, "libfusert: cannot write the profile to %s\n", path);
    }
    delete model;
  } catch (...) {
    // Destructors of the executors do not throw; nothing to report.
  }
}

size_t fusert_num_inputs(const fusert_model *model) {
  return model ? model->manifest.inputs.size() : 0;
}

size_t fusert_num_outputs(const fusert_model *model) {
  return model ? model->manifest.outputs.size() : 0;
}

fusert_status fusert_input_info(const fusert_model *model, size_t index, const char **name,
                                fusert_dtype *dtype, int *rank, const int64_t **shape) {
  return tensorInfo(model, index, /*input=*/true, name, dtype, rank, shape);
}

fusert_status fusert_output_info(const fusert_model *model, size_t index, const char **name,
                                 fusert_dtype *dtype, int *rank, const int64_t **shape) {
  return tensorInfo(model, index, /*input=*/false, name, dtype, rank, shape);
}

fusert_status fusert_bind_shapes(fusert_model *model, const fusert_tensor *inputs, size_t num_inputs) {
  return guarded([&]() -> fusert_status {
    if (!model)
      return fail(invalidArgument("model is NULL"));
    Status status = model->bindShapes(inputs, num_inputs);
    return status.ok() ? FUSERT_OK : fail(status);
  });
}

fusert_status fusert_enable_cuda_graph(fusert_model *model, int on) {
  return guarded([&]() -> fusert_status {
    if (!model)
      return fail(invalidArgument("model is NULL"));
    model->exec->setCudaGraph(on != 0);
    return FUSERT_OK;
  });
}

fusert_status fusert_fill_arena(fusert_model *model, int byte_value, cudaStream_t stream) {
  return guarded([&]() -> fusert_status {
    if (!model)
      return fail(invalidArgument("model is NULL"));
    if (byte_value < 0 || byte_value > 255)
      return fail(invalidArgument("fusert_fill_arena: byte value ", byte_value,
                                  " is not in 0..255"));
    if (!model->exec->arena() || model->manifest.arenaBytes == 0)
      return FUSERT_OK;
    Status status = model->exec->fillArena(byte_value, stream);
    return status.ok() ? FUSERT_OK : fail(status);
  });
}

fusert_status fusert_enable_profiling(fusert_model *model, int on) {
  return guarded([&]() -> fusert_status {
    if (!model)
      return fail(invalidArgument("model is NULL"));
    model->profSamples.reset(model->manifest.steps.size());
    Status status = model->exec->enableProfiling(on != 0, model->manifest.steps.size());
    model->profile = status.ok() && on != 0;
    return status.ok() ? FUSERT_OK : fail(status);
  });
}

fusert_status fusert_profile_report(const fusert_model *model, char *buf, size_t size,
                                    size_t *needed) {
  return guarded([&]() -> fusert_status {
    if (!model)
      return fail(invalidArgument("model is NULL"));
    std::string text = formatProfileJson(model->manifest, model->profSamples);
    if (needed)
      *needed = text.size() + 1;
    if (!buf && size == 0)
      return FUSERT_OK;
    if (!buf || size < text.size() + 1)
      return fail(invalidArgument("fusert_profile_report: buffer of ", size,
                                  " bytes is too small, the report needs ", text.size() + 1));
    std::memcpy(buf, text.c_str(), text.size() + 1);
    return FUSERT_OK;
  });
}

fusert_status fusert_run(fusert_model *model, const fusert_tensor *inputs, size_t num_inputs,
                         fusert_tensor *outputs, size_t num_outputs, cudaStream_t stream) {
  return guarded([&]() -> fusert_status {
    if (!model)
      return fail(invalidArgument("model is NULL"));
    std::vector<void *> in, out;
    Status status = model->bindShapes(inputs, num_inputs);
    if (!status.ok())
      return fail(status);
    status = bindTensors(model->manifest, inputs, num_inputs, outputs, num_outputs, in, out);
    if (!status.ok())
      return fail(status);
    model->resolveAll(in, out);
    status = model->exec->run(*model, in, out, stream);
    return status.ok() ? FUSERT_OK : fail(status);
  });
}

const char *fusert_target(const fusert_model *model) {
  if (!model)
    return "";
  return model->manifest.target == "cpu" ? "cpu" : "cuda";
}

fusert_status fusert_set_num_threads(fusert_model *model, int num_threads) {
  return guarded([&]() -> fusert_status {
    if (!model)
      return fail(invalidArgument("model is NULL"));
    if (num_threads < 0 || num_threads > FUSERT_MAX_THREADS)
      return fail(invalidArgument("fusert_set_num_threads: ", num_threads,
                                  " threads is not in 0..", FUSERT_MAX_THREADS));
    Status status = model->exec->setNumThreads(num_threads);
    return status.ok() ? FUSERT_OK : fail(status);
  });
}

int fusert_num_threads(const fusert_model *model) {
  return model ? model->exec->numThreads() : 0;
}

} // extern "C"
