//===- TargetSpec.h - Roofline parameters of a target -----------*- C++ -*-===//
//
// A TargetSpec is data: peak memory bandwidth, peak FLOP/s per dtype, on-chip
// memory and unit counts of one device. The files live in
// targets/<name>.textproto (protobuf text format of
// passes/cost/target_spec.proto) and are compiled into the binary; each file
// cites its sources. The ridge point (peak FLOP/s / bytes/s) separates
// memory-bound from compute-bound ops.
//
// resolveTarget() turns `--target`, `--arch` and `--device` into one target,
// arch and device through the one table of targets (targets/Targets.def plus
// the device files); every default lives there.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_PASSES_COST_TARGETSPEC_H
#define FUSEC_PASSES_COST_TARGETSPEC_H

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/DType.h"

namespace fusec::passes {

/// The partitioned on-chip memories and TensorE tile limits of one
/// NeuronCore (target_spec.proto fields 13-20; NKI.md section 3). All 0 on
/// GPU and CPU targets; all positive on NKI targets. Units: partitions,
/// bytes per partition, elements.
struct PartitionLimits {
  int64_t partitions = 0;                   ///< SBUF/PSUM partitions (nl.tile_size.pmax)
  int64_t sbufBytesPerPartition = 0;        ///< physical SBUF per partition
  int64_t sbufUsableBytesPerPartition = 0;  ///< nl.tile_size.total_available_sbuf_size
  int64_t psumBytesPerPartition = 0;        ///< = psumBanks * psumBankBytes
  int64_t psumBanks = 0;
  int64_t psumBankBytes = 0;                ///< a matmul's destination lies within one bank
  int64_t matmulStationaryFreeMax = 0;      ///< nc_matmul stationary free size (M)
  int64_t matmulMovingFreeMax = 0;          ///< nc_matmul moving free size (N)
  bool present() const { return partitions > 0; }
};

struct TargetSpec {
  std::string name;            ///< "h200"
  std::string backend;         ///< the target it belongs to: "cuda", "nki", "cpu"
  std::string arch;            ///< its native arch: "sm_90", "trn2", "znver4"
  double memoryBandwidth = 0;  ///< achievable HBM bytes/s (measured copy rate where known)
  double datasheetMemoryBandwidth = 0;  ///< datasheet HBM bytes/s
  /// Peak FLOP/s per dtype of the unit that does dense contractions
  /// (tensor cores / TensorEngine), and of the vector units for elementwise.
  std::map<ir::DType, double> peakMatrixFlops;
  std::map<ir::DType, double> peakVectorFlops;
  /// Dense datasheet FLOP/s, same keys as peakMatrixFlops / peakVectorFlops.
  std::map<ir::DType, double> datasheetMatrixFlops;
  std::map<ir::DType, double> datasheetVectorFlops;
  int64_t onChipBytesPerUnit = 0;  ///< shared memory per SM / SBUF per partition x 128
  int64_t numUnits = 0;            ///< SMs / NeuronCores
  int64_t l2Bytes = 0;
  /// NKI targets: SBUF/PSUM per partition and matmul tile limits.
  PartitionLimits partitioned;
  std::vector<std::string> sources;

  /// On-chip bytes one row of a row reduction can occupy: SBUF usable per
  /// partition where on-chip memory is partitioned (NKI: a row lies on one
  /// partition), otherwise onChipBytesPerUnit (a GPU block owns its rows).
  int64_t onChipRowBytes() const {
    return partitioned.present() ? partitioned.sbufUsableBytesPerPartition : onChipBytesPerUnit;
  }

  /// Peak matrix FLOP/s for \p t (falls back to f32, then to any entry).
  double matrixFlops(ir::DType t) const;
  double vectorFlops(ir::DType t) const;
  /// Ridge point in FLOP/byte for contractions in dtype \p t.
  double ridgePoint(ir::DType t) const { return matrixFlops(t) / memoryBandwidth; }
  /// Ridge point in FLOP/byte for vector (elementwise / reduction) work.
  double vectorRidgePoint(ir::DType t) const { return vectorFlops(t) / memoryBandwidth; }
};

/// Names of the built-in devices, sorted ("a100", "epyc9654", "h100", "h200",
/// "trn1", "trn2").
std::vector<std::string> builtinTargetNames();
/// Loads a built-in device (compiled in from targets/<name>.textproto);
/// NotFound lists the known names.
absl::StatusOr<TargetSpec> loadBuiltinTarget(const std::string &name);
/// Parses a device from protobuf text format (target_spec.proto).
/// InvalidArgument for syntax errors (with line:column), unknown dtype
/// names, a backend that is not a target of targets/Targets.def, a
/// non-positive bandwidth or rate, a repeated dtype, no matrix / vector
/// rate at all, or partition limits (fields 13-20) that are given in part,
/// on a target that is not nki, missing on an nki target, or inconsistent
/// (PSUM bytes != banks x bank bytes, usable SBUF > physical, SBUF x
/// partitions != on_chip_bytes_per_unit).
absl::StatusOr<TargetSpec> parseTargetSpec(const std::string &text);

//===----------------------------------------------------------------------===//
// The table of targets (targets/Targets.def)
//===----------------------------------------------------------------------===//

/// One FUSEC_ARCH row of targets/Targets.def.
struct ArchInfo {
  std::string target;         ///< "cuda"
  std::string arch;           ///< "sm_80"
  std::string defaultDevice;  ///< "a100": the roofline for --arch without --device
  /// Code for this arch runs on the target's devices of later archs.
  bool forwardCompatible = false;
};

/// One FUSEC_TARGET row of targets/Targets.def, with its archs and devices.
struct TargetInfo {
  std::string name;           ///< "cuda"
  std::string defaultDevice;  ///< "h200"
  std::string doc;
  std::vector<ArchInfo> archs;       ///< oldest first, as in the table
  std::vector<std::string> devices;  ///< built-in devices whose backend is this target, sorted
};

/// Every target of the table, the default one first.
const std::vector<TargetInfo> &targetTable();

/// A target, arch and device resolved from the command line.
struct ResolvedTarget {
  std::string target;  ///< "cuda", "nki", "cpu"
  std::string arch;    ///< "sm_90": what the backend generates code for
  TargetSpec device;   ///< the roofline the cost model and fusion decide with
};

/// Resolves `--target`, `--arch`, `--device` (each empty when not given)
/// through the table:
///   - target: as given; else the target of --device or --arch; else the
///     table's first target ("cuda").
///   - device: as given; else the --arch row's default device; else the
///     target's default device.
///   - arch: as given; else the device's native arch.
/// Errors (InvalidArgument, naming the flag and listing what is accepted):
/// an unknown target, arch or device; an arch or device of another target
/// (`--target nki --arch sm_90`, `--device h200 --target cpu`); an arch the
/// device cannot run (`--arch sm_90 --device a100`: a later arch than the
/// device's, or for a target without forward compatibility, any other arch).
/// Source of the rules: targets/Targets.def.
absl::StatusOr<ResolvedTarget> resolveTarget(const std::string &target, const std::string &arch,
                                             const std::string &device);

/// The device of the default target with no --arch or --device (the
/// roofline a pass uses when its PassContext carries none).
absl::StatusOr<TargetSpec> defaultTargetSpec();

}  // namespace fusec::passes

#endif  // FUSEC_PASSES_COST_TARGETSPEC_H
