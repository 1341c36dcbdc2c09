//===- TargetSpec.cpp - Roofline parameters of a target -------------------===//
//
// Parses target_spec.proto text (google::protobuf::TextFormat) into the
// TargetSpec struct and serves the built-in targets, whose text is compiled
// into the binary (internal/BuiltinTargets.h), and resolves --target,
// --arch and --device through the table of targets (targets/Targets.def).
//
//===----------------------------------------------------------------------===//
#include "passes/cost/TargetSpec.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/cost/internal/BuiltinTargets.h"
#include "support/Status.h"
#include "target_spec.pb.h"

namespace fusec::passes {
namespace {

/// Collects protobuf text-format diagnostics as "line:col: message".
class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string &message) override {
    errors_.push_back(absl::StrCat(line + 1, ":", column + 1, ": ", message));
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column,
                  const std::string &message) override {}
  std::string str() const { return absl::StrJoin(errors_, "; "); }

 private:
  std::vector<std::string> errors_;
};

double lookupRate(const std::map<ir::DType, double> &rates, ir::DType t) {
  if (auto it = rates.find(t); it != rates.end()) return it->second;
  if (auto it = rates.find(ir::DType::kF32); it != rates.end()) return it->second;
  return rates.empty() ? 0.0 : rates.begin()->second;
}

absl::Status convertRates(const google::protobuf::RepeatedPtrField<cost::FlopRate> &in,
                          const char *what, std::map<ir::DType, double> &peak,
                          std::map<ir::DType, double> &datasheet) {
  if (in.empty()) return absl::InvalidArgumentError(absl::StrCat("no ", what, " rates"));
  for (const cost::FlopRate &r : in) {
    std::optional<ir::DType> t = ir::dtypeFromName(r.dtype());
    if (!t)
      return absl::InvalidArgumentError(
          absl::StrCat(what, " rate has unknown dtype '", r.dtype(), "'"));
    if (!(r.flops() > 0))
      return absl::InvalidArgumentError(
          absl::StrCat(what, " rate for ", r.dtype(), " must be positive"));
    if (peak.count(*t))
      return absl::InvalidArgumentError(
          absl::StrCat(what, " rate for ", r.dtype(), " given twice"));
    peak[*t] = r.flops();
    datasheet[*t] = r.datasheet_flops() > 0 ? r.datasheet_flops() : r.flops();
  }
  return absl::OkStatus();
}

}  // namespace

double TargetSpec::matrixFlops(ir::DType t) const { return lookupRate(peakMatrixFlops, t); }
double TargetSpec::vectorFlops(ir::DType t) const { return lookupRate(peakVectorFlops, t); }

absl::StatusOr<TargetSpec> parseTargetSpec(const std::string &text) {
  cost::TargetSpecProto proto;
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &proto))
    return absl::InvalidArgumentError(absl::StrCat("bad target spec: ", errors.str()));

  TargetSpec spec;
  spec.name = proto.name();
  spec.backend = proto.backend();
  spec.arch = proto.arch();
  if (spec.name.empty()) return absl::InvalidArgumentError("target spec has no name");
  auto fail = [&](const std::string &msg) {
    return absl::InvalidArgumentError(absl::StrCat("target '", spec.name, "': ", msg));
  };
  bool knownBackend = false;
  std::vector<std::string> targets;
  for (const TargetInfo &t : targetTable()) {
    knownBackend |= t.name == spec.backend;
    targets.push_back(absl::StrCat("\"", t.name, "\""));
  }
  if (!knownBackend)
    return fail(absl::StrCat("backend must be ", absl::StrJoin(targets, " or "), ", got \"",
                             spec.backend, "\""));
  if (!(proto.memory_bandwidth() > 0)) return fail("memory_bandwidth must be positive");
  spec.memoryBandwidth = proto.memory_bandwidth();
  spec.datasheetMemoryBandwidth = proto.datasheet_memory_bandwidth() > 0
                                      ? proto.datasheet_memory_bandwidth()
                                      : proto.memory_bandwidth();
  if (absl::Status s = convertRates(proto.matrix(), "matrix", spec.peakMatrixFlops,
                                    spec.datasheetMatrixFlops);
      !s.ok())
    return fail(std::string(s.message()));
  if (absl::Status s = convertRates(proto.vector(), "vector", spec.peakVectorFlops,
                                    spec.datasheetVectorFlops);
      !s.ok())
    return fail(std::string(s.message()));
  if (proto.on_chip_bytes_per_unit() < 0 || proto.num_units() < 0 || proto.l2_bytes() < 0)
    return fail("on_chip_bytes_per_unit, num_units and l2_bytes must not be negative");
  spec.onChipBytesPerUnit = proto.on_chip_bytes_per_unit();
  spec.numUnits = proto.num_units();
  spec.l2Bytes = proto.l2_bytes();
  PartitionLimits &pl = spec.partitioned;
  pl.partitions = proto.partitions();
  pl.sbufBytesPerPartition = proto.sbuf_bytes_per_partition();
  pl.sbufUsableBytesPerPartition = proto.sbuf_usable_bytes_per_partition();
  pl.psumBytesPerPartition = proto.psum_bytes_per_partition();
  pl.psumBanks = proto.psum_banks();
  pl.psumBankBytes = proto.psum_bank_bytes();
  pl.matmulStationaryFreeMax = proto.matmul_stationary_free_max();
  pl.matmulMovingFreeMax = proto.matmul_moving_free_max();
  const int64_t limits[] = {pl.partitions,        pl.sbufBytesPerPartition,   pl.sbufUsableBytesPerPartition,
                            pl.psumBytesPerPartition, pl.psumBanks,           pl.psumBankBytes,
                            pl.matmulStationaryFreeMax, pl.matmulMovingFreeMax};
  int given = 0;
  for (int64_t v : limits) {
    if (v < 0) return fail("partition limits (partitions .. matmul_moving_free_max) must not be negative");
    given += v > 0;
  }
  if (given != 0 && given != 8)
    return fail("partition limits (partitions .. matmul_moving_free_max) must be given all or none");
  if (spec.backend == "nki" && given == 0)
    return fail("an nki target must give its partition limits (partitions .. matmul_moving_free_max)");
  if (spec.backend != "nki" && given != 0)
    return fail(absl::StrCat("partition limits are NeuronCore figures; a ", spec.backend, " target has none"));
  if (given) {
    if (pl.psumBanks * pl.psumBankBytes != pl.psumBytesPerPartition)
      return fail("psum_bytes_per_partition must equal psum_banks x psum_bank_bytes");
    if (pl.sbufUsableBytesPerPartition > pl.sbufBytesPerPartition)
      return fail("sbuf_usable_bytes_per_partition exceeds sbuf_bytes_per_partition");
    if (spec.onChipBytesPerUnit && spec.onChipBytesPerUnit != pl.partitions * pl.sbufBytesPerPartition)
      return fail("on_chip_bytes_per_unit must equal partitions x sbuf_bytes_per_partition");
  }
  spec.sources.assign(proto.sources().begin(), proto.sources().end());
  return spec;
}

std::vector<std::string> builtinTargetNames() {
  std::vector<std::string> names;
  for (const internal::BuiltinTargetText &t : internal::builtinTargetTexts())
    names.push_back(t.name);
  return names;
}

absl::StatusOr<TargetSpec> loadBuiltinTarget(const std::string &name) {
  for (const internal::BuiltinTargetText &t : internal::builtinTargetTexts()) {
    if (name != t.name) continue;
    FUSEC_ASSIGN_OR_RETURN(TargetSpec spec, parseTargetSpec(t.text));
    FUSEC_RET_CHECK(spec.name == name, "built-in target file '", name,
                    ".textproto' names itself '", spec.name, "'");
    return spec;
  }
  return absl::NotFoundError(absl::StrCat("unknown target '", name, "' (known: ",
                                          absl::StrJoin(builtinTargetNames(), ", "), ")"));
}

//===----------------------------------------------------------------------===//
// The table of targets
//===----------------------------------------------------------------------===//

namespace {

/// The raw rows of targets/Targets.def, before devices are attached.
std::vector<TargetInfo> tableRows() {
  std::vector<TargetInfo> rows;
#define FUSEC_TARGET(NAME, DEFAULT_DEVICE, DOC) rows.push_back({NAME, DEFAULT_DEVICE, DOC, {}, {}});
#define FUSEC_ARCH(TARGET, ARCH, DEFAULT_DEVICE, FORWARD)                      \
  for (TargetInfo &t : rows)                                                   \
    if (t.name == TARGET) t.archs.push_back({TARGET, ARCH, DEFAULT_DEVICE, FORWARD});
#include "targets/Targets.def"
  return rows;
}

/// Reads the backend and arch fields of every built-in device file (cheap:
/// one text parse each, done once).
struct DeviceRow {
  std::string name, backend, arch;
};
const std::vector<DeviceRow> &deviceRows() {
  static const std::vector<DeviceRow> *rows = [] {
    auto *out = new std::vector<DeviceRow>;
    for (const internal::BuiltinTargetText &t : internal::builtinTargetTexts()) {
      cost::TargetSpecProto proto;
      // A file that does not parse is reported by loadBuiltinTarget when used.
      if (!google::protobuf::TextFormat::ParseFromString(t.text, &proto)) continue;
      out->push_back({t.name, proto.backend(), proto.arch()});
    }
    return out;
  }();
  return *rows;
}

const DeviceRow *findDevice(const std::string &name) {
  for (const DeviceRow &d : deviceRows())
    if (d.name == name) return &d;
  return nullptr;
}

const TargetInfo *findTarget(const std::string &name) {
  for (const TargetInfo &t : targetTable())
    if (t.name == name) return &t;
  return nullptr;
}

/// Index of \p arch in \p t's arch list, else of the target's "*" row
/// (any arch name; its backend validates it, e.g. cpu: an LLVM CPU name),
/// else -1. \p exact: only a row that names \p arch.
int archIndex(const TargetInfo &t, const std::string &arch, bool exact = false) {
  for (size_t i = 0; i < t.archs.size(); ++i)
    if (t.archs[i].arch == arch) return static_cast<int>(i);
  if (!exact && !arch.empty())
    for (size_t i = 0; i < t.archs.size(); ++i)
      if (t.archs[i].arch == "*") return static_cast<int>(i);
  return -1;
}

std::string archList(const TargetInfo &t) {
  std::vector<std::string> names;
  for (const ArchInfo &a : t.archs) names.push_back(a.arch == "*" ? "<any name the backend accepts>" : a.arch);
  return absl::StrJoin(names, ", ");
}

}  // namespace

const std::vector<TargetInfo> &targetTable() {
  static const std::vector<TargetInfo> *table = [] {
    auto *rows = new std::vector<TargetInfo>(tableRows());
    for (TargetInfo &t : *rows)
      for (const DeviceRow &d : deviceRows())
        if (d.backend == t.name) t.devices.push_back(d.name);
    return rows;
  }();
  return *table;
}

absl::StatusOr<ResolvedTarget> resolveTarget(const std::string &target, const std::string &arch,
                                             const std::string &device) {
  const std::vector<TargetInfo> &table = targetTable();
  FUSEC_RET_CHECK(!table.empty(), "targets/Targets.def has no target");
  std::vector<std::string> targetNames;
  for (const TargetInfo &t : table) targetNames.push_back(t.name);

  // The device, if named, must exist; it may name the target.
  const DeviceRow *dev = nullptr;
  if (!device.empty()) {
    dev = findDevice(device);
    if (!dev)
      return absl::InvalidArgumentError(absl::StrCat("unknown --device '", device, "' (known: ",
                                                     absl::StrJoin(builtinTargetNames(), ", "),
                                                     ")"));
  }
  // The target: given, else implied by the device or the arch, else the default.
  const TargetInfo *tgt = nullptr;
  if (!target.empty()) {
    tgt = findTarget(target);
    if (!tgt)
      return absl::InvalidArgumentError(absl::StrCat("unknown --target '", target, "' (expected: ",
                                                     absl::StrJoin(targetNames, ", "), ")"));
  } else if (dev) {
    tgt = findTarget(dev->backend);
  } else if (!arch.empty()) {
    for (const TargetInfo &t : table)
      if (archIndex(t, arch, /*exact=*/true) >= 0) tgt = &t;
    if (!tgt) {
      std::vector<std::string> all;
      for (const TargetInfo &t : table) all.push_back(absl::StrCat(t.name, ": ", archList(t)));
      return absl::InvalidArgumentError(absl::StrCat("unknown --arch '", arch, "' (known: ",
                                                     absl::StrJoin(all, "; "), ")"));
    }
  } else {
    tgt = &table.front();
  }
  FUSEC_RET_CHECK(tgt != nullptr, "device '", device, "' names an unknown target");

  if (dev && dev->backend != tgt->name)
    return absl::InvalidArgumentError(absl::StrCat(
        "--device ", device, " is a ", dev->backend, " device, not a ", tgt->name, " one (",
        tgt->name, " devices: ", absl::StrJoin(tgt->devices, ", "), ")"));
  int archAt = -1;
  if (!arch.empty()) {
    archAt = archIndex(*tgt, arch);
    if (archAt < 0)
      return absl::InvalidArgumentError(absl::StrCat("--arch ", arch, " is not a ", tgt->name,
                                                     " arch (", tgt->name,
                                                     " archs: ", archList(*tgt), ")"));
  }
  // The device: given, else the arch's default, else the target's default.
  std::string devName = dev ? dev->name
                            : archAt >= 0 ? tgt->archs[archAt].defaultDevice
                                          : tgt->defaultDevice;
  FUSEC_ASSIGN_OR_RETURN(TargetSpec spec, loadBuiltinTarget(devName));
  FUSEC_RET_CHECK(spec.backend == tgt->name, "targets/Targets.def: default device '", devName,
                  "' of ", tgt->name, " belongs to ", spec.backend);
  const int nativeAt = archIndex(*tgt, spec.arch);
  FUSEC_RET_CHECK(nativeAt >= 0, "device '", devName, "' has arch '", spec.arch,
                  "', which targets/Targets.def does not list for ", tgt->name);
  if (archAt >= 0 && tgt->archs[archAt].arch != "*") {
    // An arch that is not forward compatible runs on its own devices; an
    // arch-specific variant ("sm_90a", NVIDIA's suffix) on those of the
    // arch it extends.
    const bool runs = tgt->archs[archAt].forwardCompatible
                          ? archAt <= nativeAt
                          : archAt == nativeAt || tgt->archs[archAt].arch == spec.arch + "a";
    if (!runs)
      return absl::InvalidArgumentError(absl::StrCat(
          "--arch ", arch, " does not run on --device ", devName, " (a ", spec.arch, " device",
          tgt->archs[archAt].forwardCompatible ? "; code for older archs runs on newer devices"
                                               : "",
          ")"));
  }
  ResolvedTarget r;
  r.target = tgt->name;
  r.arch = arch.empty() ? spec.arch : arch;
  r.device = std::move(spec);
  return r;
}

absl::StatusOr<TargetSpec> defaultTargetSpec() {
  FUSEC_ASSIGN_OR_RETURN(ResolvedTarget r, resolveTarget("", "", ""));
  return r.device;
}

}  // namespace fusec::passes
