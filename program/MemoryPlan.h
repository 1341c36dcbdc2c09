//===- MemoryPlan.h - Buffers, storage classes and the activation arena -*- C++ -*-===//
//
// Decides where every tensor of a lowered model lives at run time
// (docs/ARTIFACT.md, "buffers"). Each graph Value that a step names, plus
// every graph input and output, becomes one manifest buffer with a storage
// class:
//
//   input   a graph input that needs data (not a constant)
//   output  a graph output; when the output Value is itself an input, a
//           constant, or the result of a view, the caller's output buffer is
//           filled by a "copy" step appended at the end of the program (or,
//           when a view's root is an arena tensor that no one else claims,
//           the root is made an alias of the output buffer: no copy)
//   weight  a constant that some step reads; offsets in weights.bin are
//           256-byte aligned, in order of first use
//   alias   the result of a view (Reshape, Squeeze, Unsqueeze, Flatten,
//           Identity, one-output Dropout; isViewNode): the same
//           bytes as its input, offset 0; chains of views resolve to the root;
//           or a StridedAlias of a step (Lowering.h): its root's bytes from
//           an offset on, read only by that step's kernel through strides
//   arena   everything else
//
// The arena is planned by liveness over the step order: a buffer is live
// from the first step that names it (its producer) to the last step that
// names it or any alias of it. Offsets follow the greedy-by-size strategy
// (as in TensorFlow Lite's arena planner): buffers sorted by decreasing
// size are placed one by one in the smallest gap, among buffers already
// placed whose live ranges overlap, that fits; otherwise after the last of
// them. Every offset is a multiple of kBufferAlignment.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PROGRAM_MEMORYPLAN_H
#define FUSEC_PROGRAM_MEMORYPLAN_H

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "program/Lowering.h"
#include "program/SymExtent.h"
#include "ir/Graph.h"

namespace fusec::program {

/// Alignment in bytes of every weight and arena offset (ARTIFACT.md).
inline constexpr int64_t kBufferAlignment = 256;

/// Manifest storage classes (ARTIFACT.md "storage").
enum class Storage { kInput, kOutput, kWeight, kArena, kAlias };
/// \returns the manifest spelling: "input", "output", "weight", "arena", "alias".
const char *storageName(Storage s);

/// One manifest buffer.
struct PlannedBuffer {
  int id = -1;                       ///< manifest id (= position in MemoryPlan::buffers)
  const ir::Value *value = nullptr;  ///< the graph Value it holds
  std::string name;                  ///< the Value's name
  ir::DType dtype = ir::DType::kF32;
  std::vector<int64_t> shape;        ///< static
  int64_t bytes = 0;                 ///< elements * dtype size
  Storage storage = Storage::kArena;
  int index = -1;       ///< kInput / kOutput: position in MemoryPlan::inputs / outputs
  int64_t offset = 0;   ///< kWeight: in weights.bin; kArena: in the arena; kAlias: into `of`
  int of = -1;          ///< kAlias: id of the (non-alias) buffer it views
  /// Dynamic shapes: the shape as the symbols give it (program/Symbolic.h);
  /// empty for a static artifact.
  std::vector<SymExtent> symbolicShape;
  int firstStep = -1;   ///< kArena: first step of the live range (inclusive)
  int lastStep = -1;    ///< kArena: last step of the live range (inclusive)
};

/// The complete memory plan of one model.
struct MemoryPlan {
  std::vector<PlannedBuffer> buffers;
  /// The program steps, in order; buffer ids of the Values they name come
  /// from bufferId(). The copies run after them (step index steps.size() + j).
  std::vector<Step> steps;
  struct Copy {
    std::string name;  ///< "copy_<output name>"
    int src = -1, dst = -1;
    int64_t bytes = 0;
  };
  std::vector<Copy> copies;
  std::vector<int> inputs;   ///< buffer ids of the graph inputs, in graph order
  std::vector<int> outputs;  ///< buffer ids of the graph outputs, in graph order
  std::vector<int> weights;  ///< buffer ids of weights, in weights.bin order
  int64_t weightsBytes = 0;  ///< size of weights.bin (end of the last weight)
  int64_t arenaBytes = 0;    ///< size of the planned arena
  int64_t arenaNaiveBytes = 0;  ///< sum of the aligned sizes of all arena buffers

  /// \returns the buffer id of \p v, or -1 if \p v has no buffer.
  int bufferId(const ir::Value *v) const;
  /// Human-readable summary: "arena 1.5 MiB planned vs 4.0 MiB unplanned ...".
  std::string summary() const;

  absl::flat_hash_map<const ir::Value *, int> idOf;
};

/// One arena request for planArena(): \p bytes live over steps
/// [firstStep, lastStep] (inclusive).
struct LiveRange {
  int64_t bytes = 0;
  int firstStep = 0;
  int lastStep = 0;
};

/// Greedy-by-size best-fit placement (see the file comment). \returns one
/// offset per range (multiples of \p alignment) and sets \p totalBytes to the
/// arena size (0 for no ranges). Ranges whose step intervals overlap never
/// overlap in memory. Deterministic: ties in size are broken by first step,
/// then by position.
std::vector<int64_t> planArena(const std::vector<LiveRange> &ranges, int64_t alignment,
                               int64_t *totalBytes);

/// Rounds \p n up to a multiple of \p alignment (> 0).
int64_t alignUp(int64_t n, int64_t alignment);

/// Plans the buffers of \p graph run by \p steps (the program order).
/// Errors: InvalidArgument if a buffer's shape is not static (naming the
/// Value) or a graph output is listed twice; Unimplemented for dtypes the
/// artifact format has no name for (string, undefined); Internal
/// if a step names a null Value or a Value that is neither a graph input, a
/// constant nor a node result, or if no step writes a graph output.
absl::StatusOr<MemoryPlan> planMemory(const ir::Graph &graph, std::vector<Step> steps);

/// \returns the manifest dtype name ("f32", ...) or null for dtypes the
/// artifact format does not support.
const char *manifestDTypeName(ir::DType t);

}  // namespace fusec::program

#endif  // FUSEC_PROGRAM_MEMORYPLAN_H
