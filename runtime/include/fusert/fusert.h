/*===- fusert.h - C API of libfusert, the fusec artifact runtime -*- C -*-===//
 *
 * Part of fusec. libfusert loads the folder that `fusec --target cuda` or
 * `fusec --target cpu` writes (manifest.json, libmodel.so, weights.bin; see
 * docs/ARTIFACT.md) and runs it: a cuda artifact on a caller's CUDA stream, a
 * cpu artifact on the calling thread and the model's own thread pool, with
 * every buffer in host memory. It depends on libdl and OpenBLAS and, when
 * built with CUDA, on the CUDA runtime, cuBLASLt and cuDNN (when found).
 * A libfusert built without the CUDA toolkit runs cpu artifacts only, and this
 * header then needs no CUDA header (cudaStream_t is declared below).
 *
 * Conventions: every function that can fail returns a fusert_status; on
 * failure fusert_last_error() holds a message for the calling thread. No
 * function aborts or lets a C++ exception escape. A model may be used by one
 * thread at a time; distinct models are independent.
 *
 *===----------------------------------------------------------------------===*/
#ifndef FUSERT_FUSERT_H
#define FUSERT_FUSERT_H

#include <stddef.h>
#include <stdint.h>

/* The CUDA runtime's header when it is on the include path; otherwise the
 * same declaration of cudaStream_t it makes (an opaque pointer), so that a
 * program for cpu artifacts compiles without CUDA. */
#if defined(__has_include)
#if __has_include(<cuda_runtime_api.h>) && !defined(FUSERT_NO_CUDA_HEADERS)
#include <cuda_runtime_api.h>
#define FUSERT_HAVE_CUDA_HEADERS 1
#endif
#endif
#ifndef FUSERT_HAVE_CUDA_HEADERS
typedef struct CUstream_st *cudaStream_t;
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define FUSERT_ARTIFACT_VERSION 1

/* Marks the exported API; libfusert is built with hidden visibility. */
#if defined(__GNUC__)
#define FUSERT_API __attribute__((visibility("default")))
#else
#define FUSERT_API
#endif

/** Status codes. FUSERT_OK is 0; every other value is a failure. */
typedef enum fusert_status {
  FUSERT_OK = 0,
  FUSERT_INVALID_ARGUMENT = 1, /**< bad argument, malformed artifact, bad input */
  FUSERT_NOT_FOUND = 2,        /**< missing file, library or kernel symbol */
  FUSERT_CUDA_ERROR = 3,       /**< a CUDA runtime call or a kernel failed */
  FUSERT_CUBLAS_ERROR = 4,     /**< a cuBLASLt call failed or found no algorithm */
  FUSERT_CUDNN_ERROR = 5,      /**< a cuDNN call failed or found no algorithm */
  FUSERT_INTERNAL = 6          /**< broken invariant or out of host memory */
} fusert_status;

/** Element types; the names in manifest.json are given in brackets. */
typedef enum fusert_dtype {
  FUSERT_F32 = 0,  /**< "f32" */
  FUSERT_F16 = 1,  /**< "f16" */
  FUSERT_BF16 = 2, /**< "bf16" */
  FUSERT_F64 = 3,  /**< "f64" */
  FUSERT_I64 = 4,  /**< "i64" */
  FUSERT_I32 = 5,  /**< "i32" */
  FUSERT_I8 = 6,   /**< "i8" */
  FUSERT_U8 = 7,   /**< "u8" */
  FUSERT_BOOL = 8, /**< "bool", one byte per element */
  FUSERT_I16 = 9,  /**< "i16" */
  FUSERT_U16 = 10, /**< "u16" */
  FUSERT_U32 = 11, /**< "u32" */
  FUSERT_U64 = 12, /**< "u64" */
  /* float8 (ONNX's FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ),
     one byte per element holding the format's code. */
  FUSERT_F8E4M3FN = 13,   /**< "f8e4m3fn" */
  FUSERT_F8E4M3FNUZ = 14, /**< "f8e4m3fnuz" */
  FUSERT_F8E5M2 = 15,     /**< "f8e5m2" */
  FUSERT_F8E5M2FNUZ = 16  /**< "f8e5m2fnuz" */
} fusert_dtype;

/** A tensor handed to fusert_run: dense, row-major, in device memory for a
 *  cuda artifact, in host memory for a cpu artifact. */
typedef struct fusert_tensor {
  const char *name;     /**< the model's input/output name */
  fusert_dtype dtype;
  int rank;
  const int64_t *shape; /**< `rank` dims; may be NULL when rank is 0 */
  void *data;           /**< device pointer (cuda; at least 256-byte aligned for best
                             speed) or host pointer (cpu; 64-byte aligned for best speed) */
} fusert_tensor;

/** A loaded artifact. Opaque. */
typedef struct fusert_model fusert_model;

/** \returns the message of the most recent failure on the calling thread
 *  ("" if none). Valid until the next failing call on this thread. */
FUSERT_API const char *fusert_last_error(void);

/** \returns a static name for \p status ("FUSERT_OK", ...). */
FUSERT_API const char *fusert_status_name(fusert_status status);

/** \returns the manifest name of \p dtype ("f32", ...), or "?" if unknown. */
FUSERT_API const char *fusert_dtype_name(fusert_dtype dtype);

/** \returns the size in bytes of one element of \p dtype, 0 if unknown. */
FUSERT_API size_t fusert_dtype_size(fusert_dtype dtype);

/** Loads the artifact in folder \p artifact_dir: parses and checks
 *  manifest.json, dlopens its library and resolves every kernel symbol, reads
 *  weights.bin once, allocates the activation arena. The manifest's "target"
 *  picks the executor: "cuda" (also when absent) uploads the weights to the
 *  current CUDA device and creates the cuBLASLt/cuDNN state the steps need;
 *  "cpu" checks "cpu_abi" and that the host has every "cpu_features" entry,
 *  keeps weights and arena in 64-byte aligned host memory and starts the
 *  model's thread pool (fusert_set_num_threads). Other targets ("nki") are
 *  refused. On success *\p out owns everything; release it with
 *  fusert_unload.
 *  Errors: FUSERT_INVALID_ARGUMENT (NULL argument, malformed or inconsistent
 *  manifest: bad JSON, missing field, unknown dtype/storage/step kind/
 *  epilogue, offsets or sizes out of range, weights.bin size mismatch, conv
 *  without cuDNN support, a target this libfusert cannot run, a cpu artifact
 *  of another cpu_abi, an unknown cpu feature or one the host lacks, a gemm
 *  or conv step in a cpu artifact); FUSERT_NOT_FOUND (manifest.json, library or
 *  weights.bin missing, kernel symbol missing); FUSERT_CUDA_ERROR (no device,
 *  allocation or upload failed); FUSERT_INTERNAL (host memory or threads
 *  could not be allocated); FUSERT_CUBLAS_ERROR / FUSERT_CUDNN_ERROR
 *  (handle creation failed, no algorithm for a step). */
FUSERT_API fusert_status fusert_load(const char *artifact_dir, fusert_model **out);

/** Releases everything \p model owns. Waits for nothing: the caller must make
 *  sure no run is still in flight on a stream. NULL is ignored. */
FUSERT_API void fusert_unload(fusert_model *model);

/** \returns the number of model inputs (0 for NULL). */
FUSERT_API size_t fusert_num_inputs(const fusert_model *model);
/** \returns the number of model outputs (0 for NULL). */
FUSERT_API size_t fusert_num_outputs(const fusert_model *model);

/** Describes input \p index: any of the out-pointers may be NULL. *\p name and
 *  *\p shape stay valid until fusert_unload. An artifact compiled with
 *  dynamic shapes (its manifest lists "symbols"; docs/ARTIFACT.md) shows -1
 *  for every input dim a symbol decides, and the same for its outputs until
 *  fusert_bind_shapes or fusert_run binds the symbols; the outputs then
 *  show their dims for that binding (the pointer stays valid, the values
 *  change with the next binding).
 *  Errors: FUSERT_INVALID_ARGUMENT (NULL model, index out of range). */
FUSERT_API fusert_status fusert_input_info(const fusert_model *model, size_t index,
                                           const char **name, fusert_dtype *dtype,
                                           int *rank, const int64_t **shape);
/** Like fusert_input_info, for output \p index. */
FUSERT_API fusert_status fusert_output_info(const fusert_model *model, size_t index,
                                            const char **name, fusert_dtype *dtype,
                                            int *rank, const int64_t **shape);

/** Runs the model. \p inputs / \p outputs give every input / output exactly
 *  once, in any order, matched by name; outputs are written by the run.
 *  cuda artifact: runs asynchronously on \p stream (0 = legacy default
 *  stream); the call returns once all work is enqueued; synchronise \p stream
 *  before reading outputs. cpu artifact: \p stream is ignored (pass 0); the
 *  steps run on the calling thread and the model's thread pool, and the call
 *  returns when the outputs are written.
 *  Errors: FUSERT_INVALID_ARGUMENT (NULL model, wrong count, unknown or
 *  repeated name, dtype/rank/dims mismatch, NULL data or shape);
 *  FUSERT_CUDA_ERROR (launch, copy or graph failure; the message names the
 *  step); FUSERT_CUBLAS_ERROR / FUSERT_CUDNN_ERROR (library failure);
 *  FUSERT_INTERNAL (a cpu kernel returned nonzero; the message names the
 *  step). */
FUSERT_API fusert_status fusert_run(fusert_model *model, const fusert_tensor *inputs,
                                    size_t num_inputs, fusert_tensor *outputs,
                                    size_t num_outputs, cudaStream_t stream);

/** Dynamic shapes: binds the model's symbols from the shapes of \p inputs
 *  (every input, matched by name; `data` may be NULL), so that
 *  fusert_output_info reports the output dims for them; fusert_run does
 *  the same with its inputs. A new binding re-plans the activation arena
 *  for its sizes and grows it when needed (the arena keeps the largest
 *  size bound so far); a cuda model also switches to the binding's
 *  cuBLASLt / cuDNN plans (built on first use, kept for 8 bindings). No
 *  effect for an artifact of static shapes. Errors:
 *  FUSERT_INVALID_ARGUMENT (a missing input, a rank that differs, a dim
 *  outside its symbol's compiled range or that contradicts another dim, a
 *  gemm or conv step that does not fit its buffers at this binding);
 *  FUSERT_INTERNAL (host memory for the larger arena); FUSERT_CUDA_ERROR,
 *  FUSERT_CUBLAS_ERROR, FUSERT_CUDNN_ERROR (device memory, plans). */
FUSERT_API fusert_status fusert_bind_shapes(fusert_model *model, const fusert_tensor *inputs,
                                            size_t num_inputs);

/** Turns CUDA-graph execution on (\p on != 0) or off. When on, the first run
 *  for a given set of input/output pointers and stream captures the steps into
 *  a CUDA graph; later runs with the same pointers and stream replay it, and a
 *  run with other pointers re-captures. Dynamic shapes: one graph per
 *  binding, for the 8 most recently used bindings; a binding that grows the
 *  arena drops them all. Runs on the legacy default stream (stream 0),
 *  which cannot be captured, run the steps directly. No effect on a cpu
 *  model.
 *  Errors: FUSERT_INVALID_ARGUMENT (NULL model). */
FUSERT_API fusert_status fusert_enable_cuda_graph(fusert_model *model, int on);

/** Debugging aid: sets every byte of \p model's activation arena (the
 *  intermediate tensors of every step) to \p byte_value, enqueued on
 *  \p stream. With 0xFF every f32, f16 and bf16 element is a NaN, so a step
 *  that reads an element no earlier step wrote makes the outputs NaN instead
 *  of silently reading a stale value (fusec-run does this before its
 *  checked run). A model without an arena is left as it is. cpu model: a
 *  memset on the calling thread, \p stream ignored.
 *  Errors: FUSERT_INVALID_ARGUMENT (NULL model, \p byte_value outside
 *  0..255); FUSERT_CUDA_ERROR (the memset could not be enqueued). */
FUSERT_API fusert_status fusert_fill_arena(fusert_model *model, int byte_value,
                                           cudaStream_t stream);

/** Turns per-step profiling on (\p on != 0) or off. While on, fusert_run
 *  launches the steps directly (no CUDA graph), records a CUDA event before
 *  each step and after the last, waits for the run to finish (the call becomes
 *  synchronous) and keeps each step's time (cpu model: std::chrono::
 *  steady_clock around each step). Turning it on clears the samples
 *  kept so far, so a caller can warm up first. Setting the environment
 *  variable FUSERT_PROFILE=1 turns it on at fusert_load; with
 *  FUSERT_PROFILE_JSON=PATH, fusert_unload then writes fusert_profile_report's
 *  JSON to PATH (overwriting it) if at least one run was profiled.
 *  Step times include any idle gap between launches, so steps much shorter
 *  than a launch (a few microseconds) read high.
 *  Errors: FUSERT_INVALID_ARGUMENT (NULL model); FUSERT_CUDA_ERROR (events
 *  could not be created). */
FUSERT_API fusert_status fusert_enable_profiling(fusert_model *model, int on);

/** Writes the profile of the runs made since profiling was turned on, as one
 *  NUL-terminated JSON object, into \p buf of \p size bytes:
 *    {"model": NAME, "runs": N, "total_us": SUM_OF_MEDIANS,
 *     "steps": [{"index": I, "name": S, "kind": "kernel"|"gemm"|"conv"|"copy",
 *                "median_us": T, "min_us": T, "bytes": B, "flops": F}, ...]}
 *  in step order. `bytes` is the sum of the sizes of the step's distinct
 *  buffers (a copy counts read + written); `flops` is 2·m·n·k·batch for a
 *  gemm, 2·outputs·(C/group)·kernel area for a conv, 0 otherwise. Times are
 *  0 when no run was profiled. *\p needed (if not NULL) receives the size
 *  the text needs, NUL included; pass buf NULL and size 0 to only ask.
 *  Errors: FUSERT_INVALID_ARGUMENT (NULL model; buf non-NULL and size smaller
 *  than needed: nothing is written then). */
FUSERT_API fusert_status fusert_profile_report(const fusert_model *model, char *buf,
                                               size_t size, size_t *needed);

/** \returns the manifest target of \p model, "cuda" or "cpu" (a static
 *  string; "" for NULL). */
FUSERT_API const char *fusert_target(const fusert_model *model);

/** Sets the number of worker threads of a cpu model's thread pool to
 *  \p num_threads (the calling thread of fusert_run counts as one; 1 runs
 *  everything on it), or back to the default with 0: the environment
 *  variable FUSERT_NUM_THREADS when set to a number >= 1, else
 *  std::thread::hardware_concurrency(). Each model has its own pool, so
 *  models run from several threads at once are independent (their pools
 *  then share the cores: size them so that the sum fits the machine). The
 *  per-thread workspace is resized to match. Not while a run of \p model is
 *  in progress. No effect (FUSERT_OK) on a cuda model.
 *  Errors: FUSERT_INVALID_ARGUMENT (NULL model, \p num_threads outside
 *  0..FUSERT_MAX_THREADS); FUSERT_INTERNAL (threads or workspace could not
 *  be created; the pool then has 1 thread). */
FUSERT_API fusert_status fusert_set_num_threads(fusert_model *model, int num_threads);

/** Upper bound of fusert_set_num_threads and FUSERT_NUM_THREADS. */
#define FUSERT_MAX_THREADS 256

/** \returns the number of threads a cpu model's steps run on (the calling
 *  thread included), 0 for a cuda model or NULL. */
FUSERT_API int fusert_num_threads(const fusert_model *model);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUSERT_FUSERT_H */
