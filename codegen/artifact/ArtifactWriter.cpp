//===- ArtifactWriter.cpp - Writes the fusec artifact folder --------------===//
//
// Follows docs/ARTIFACT.md (format version 1) field for field; the runtime's
// manifest checker (runtime/internal/Manifest.cpp) is the other side.
//
//===----------------------------------------------------------------------===//
#include "codegen/artifact/ArtifactWriter.h"

#include <algorithm>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/Backend.h"
#include "codegen/cuda/CublasEpilogue.h"
#include "nlohmann/json.hpp"
#include "passes/fusion/FusionDump.h"
#include "runtime/ArtifactFormat.h"
#include "runtime/internal/Checksum.h"
#include "runtime/internal/ManifestDigest.h"
#include "support/Status.h"

namespace fusec::artifact {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {


/// A dim or size: its integer when static, else the symbolic form's text
/// ("4*batch*seq"; docs/ARTIFACT.md, "dynamic shapes").
Json extentJson(const SymExtent &e) { return e.isConstant() ? Json(e.coeff()) : Json(e.str()); }

Json shapeJson(const PlannedBuffer &b) {
  if (b.symbolicShape.empty()) return Json(b.shape);
  Json s = Json::array();
  for (const SymExtent &e : b.symbolicShape) s.push_back(extentJson(e));
  return s;
}

Json bytesJson(const PlannedBuffer &b) {
  if (b.symbolicShape.empty()) return Json(b.bytes);
  return extentJson(program::product(b.symbolicShape) * SymExtent::constant(ir::dtypeSize(b.dtype)));
}

Json bufferJson(const PlannedBuffer &b) {
  Json j;
  j["id"] = b.id;
  j["name"] = b.name;
  j["dtype"] = manifestDTypeName(b.dtype);
  j["shape"] = shapeJson(b);
  j["bytes"] = bytesJson(b);
  j["storage"] = storageName(b.storage);
  switch (b.storage) {
    case Storage::kInput:
    case Storage::kOutput:
      j["index"] = b.index;
      break;
    case Storage::kWeight:
      j["offset"] = b.offset;
      break;
    case Storage::kArena:
      j["offset"] = b.offset;
      // Dynamic shapes: the runtime plans the arena for each binding.
      if (!b.symbolicShape.empty()) j["live"] = {b.firstStep, b.lastStep};
      break;
    case Storage::kAlias:
      j["of"] = b.of;
      j["offset"] = b.offset;
      break;
  }
  return j;
}

Json tensorJson(const PlannedBuffer &b) {
  Json j;
  j["name"] = b.name;
  j["dtype"] = manifestDTypeName(b.dtype);
  j["shape"] = shapeJson(b);
  j["buffer"] = b.id;
  return j;
}

/// A symbolic form a library step's field may take in the manifest: a
/// product of symbols (the runtime's extents have no offset).
absl::Status checkProduct(const std::string &kind, const std::string &name, const std::string &field,
                          const SymExtent &e) {
  if (e.offset() == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("dynamic shapes: ", kind, " '", name, "': ", field, " is ",
                                                    e.str(), ", not a product of symbols; bind the dims with --shape"));
}

/// Dynamic shapes: writes the fields of gemm step \p s that depend on the
/// symbols (GemmParams::symbolic) over their probe values in \p j.
absl::Status gemmSymbolicJson(const Step &s, Json &j) {
  static const std::pair<const char *, const char *> kFields[] = {
      {"m", "m"},
      {"n", "n"},
      {"k", "k"},
      {"batch", "batch"},
      {"strideA", "stride_a"},
      {"strideB", "stride_b"},
      {"strideC", "stride_c"},
      {"strideD", "stride_d"}};
  for (const auto &[key, e] : s.gemm.symbolic) {
    const char *field = nullptr;
    for (const auto &[k, f] : kFields)
      if (key == k) field = f;
    if (!field)
      return absl::InternalError(absl::StrCat("dynamic shapes: gemm '", s.name, "': unknown symbolic field '", key, "'"));
    FUSEC_RETURN_IF_ERROR(checkProduct("gemm", s.name, field, e));
    j[field] = extentJson(e);
  }
  return absl::OkStatus();
}

/// Dynamic shapes: writes the elements of conv step \p s's x_shape and
/// y_shape that depend on the symbols (ConvParams::symbolic, "xShape[0]",
/// ...); the filter, pads, strides, dilations and group must be static.
absl::Status convSymbolicJson(const Step &s, Json &j) {
  static const std::pair<const char *, const char *> kFields[] = {
      {"xShape", "x_shape"}, {"yShape", "y_shape"}, {"wShape", "w_shape"}, {"pads", "pads"},
      {"strides", "strides"}, {"dilations", "dilations"}, {"group", "group"}};
  for (const auto &[key, e] : s.conv.symbolic) {
    const std::string base = key.substr(0, key.find('['));
    const char *field = nullptr;
    for (const auto &[k, f] : kFields)
      if (base == k) field = f;
    if (!field)
      return absl::InternalError(absl::StrCat("dynamic shapes: conv '", s.name, "': unknown symbolic field '", key, "'"));
    const std::string where = absl::StrCat(field, key.substr(base.size()));
    if (base != "xShape" && base != "yShape")
      return absl::FailedPreconditionError(absl::StrCat(
          "dynamic shapes: conv '", s.name, "': ", where, " is ", e.str(),
          ", which depends on the binding; only a conv's input and output shapes may (bind the dims with --shape)"));
    FUSEC_RETURN_IF_ERROR(checkProduct("conv", s.name, where, e));
    size_t i = 0;
    if (std::sscanf(key.c_str() + base.size(), "[%zu]", &i) != 1 || i >= j[field].size())
      return absl::InternalError(absl::StrCat("dynamic shapes: conv '", s.name, "': bad symbolic field '", key, "'"));
    j[field][i] = extentJson(e);
  }
  return absl::OkStatus();
}

absl::StatusOr<Json> stepJson(const MemoryPlan &mem, const Step &s) {
  using K = Step::Kind;
  auto id = [&](const ir::Value *v) { return mem.bufferId(v); };
  Json j;
  switch (s.kind) {
    case K::kKernel: {
      j["kind"] = artifact_format::kStepKernel;
      j["name"] = s.name;
      j["symbol"] = s.symbol;
      std::vector<int> ids;
      for (const ir::Value *v : s.buffers) ids.push_back(id(v));
      j["buffers"] = ids;
      break;
    }
    case K::kGemm: {
      const GemmParams &g = s.gemm;
      // A generated epilogue (its inputs past the bias) runs only inside the
      // backend's own kernel step (cpu: gemmStepBuffers); the runtime's
      // library steps apply the epilogues named below.
      if (!g.epilogueInputs.empty())
        return absl::InternalError(absl::StrCat("gemm step '", s.name, "' has a generated epilogue (",
                                                g.epilogueInputs.size(), " inputs), which no gemm step runs"));
      j["kind"] = artifact_format::kStepGemm;
      j["name"] = s.name;
      j["a"] = id(g.a);
      j["b"] = id(g.b);
      if (g.c) j["c"] = id(g.c);
      if (g.bias) j["bias"] = id(g.bias);
      j["d"] = id(g.d);
      j["m"] = g.m;
      j["n"] = g.n;
      j["k"] = g.k;
      j["batch"] = g.batch;
      j["stride_a"] = g.strideA;
      j["stride_b"] = g.strideB;
      j["stride_c"] = g.strideC;
      j["stride_d"] = g.strideD;
      j["trans_a"] = g.transA;
      j["trans_b"] = g.transB;
      j["alpha"] = g.alpha;
      j["beta"] = g.beta;
      // The lowering folds only what cuBLASLt fuses, so this matches.
      const absl::StatusOr<const char *> epilogue = codegen::cublasLtEpilogue(g.epilogue);
      j["epilogue"] = epilogue.ok() ? *epilogue : "?";
      j["dtype"] = manifestDTypeName(g.dtype) ? manifestDTypeName(g.dtype) : "?";
      // D's own dtype only where it differs (an output Cast folded in).
      if (g.dDtype != g.dtype)
        j["d_dtype"] = manifestDTypeName(g.dDtype) ? manifestDTypeName(g.dDtype) : "?";
      j["compute"] = g.compute;
      FUSEC_RETURN_IF_ERROR(gemmSymbolicJson(s, j));
      break;
    }
    case K::kConv: {
      const ConvParams &c = s.conv;
      // As for gemm: the cpu backend's kernel step (convStepBuffers) only.
      if (!c.epilogueInputs.empty())
        return absl::InternalError(absl::StrCat("conv step '", s.name, "' has a generated epilogue (",
                                                c.epilogueInputs.size(), " inputs), which no conv step runs"));
      j["kind"] = artifact_format::kStepConv;
      j["name"] = s.name;
      j["x"] = id(c.x);
      j["w"] = id(c.w);
      if (c.bias) j["bias"] = id(c.bias);
      j["y"] = id(c.y);
      j["x_shape"] = c.xShape;
      j["w_shape"] = c.wShape;
      j["y_shape"] = c.yShape;
      j["pads"] = c.pads;
      j["strides"] = c.strides;
      j["dilations"] = c.dilations;
      j["group"] = c.group;
      j["dtype"] = manifestDTypeName(c.dtype) ? manifestDTypeName(c.dtype) : "?";
      FUSEC_RETURN_IF_ERROR(convSymbolicJson(s, j));
      break;
    }
    case K::kCopy: {
      j["kind"] = artifact_format::kStepCopy;
      j["name"] = s.name;
      j["src"] = id(s.src);
      j["dst"] = id(s.dst);
      j["bytes"] = s.dst ? bytesJson(mem.buffers[id(s.dst)]) : Json(0);
      break;
    }
  }
  if (!s.guard.empty()) {
    Json g = Json::array();
    for (const ir::GuardTerm &t : s.guard)
      g.push_back(Json{{artifact_format::kGuardBuffer, id(t.cond)}, {artifact_format::kGuardWhen, t.when}});
    j[artifact_format::kStepGuard] = std::move(g);
  }
  return j;
}

/// True if a step of \p mem calls the backend's library: kernel steps, and
/// gemm / conv steps when \p libraryCalls (BackendModule::libraryRunsLibraryCalls).
bool needsLibrary(const MemoryPlan &mem, bool libraryCalls) {
  for (const Step &s : mem.steps)
    if (s.kind == Step::Kind::kKernel || libraryCalls) return true;
  return false;
}

/// True if \p inner is \p outer or lies inside it (both canonical).
bool isWithin(const fs::path &inner, const fs::path &outer) {
  auto oi = outer.begin(), ii = inner.begin();
  for (; oi != outer.end(); ++oi, ++ii) {
    if (oi->empty()) continue;  // trailing separator
    if (ii == inner.end() || *oi != *ii) return false;
  }
  return true;
}

/// The previous artifact's manifest in \p dir, or a non-object if there is none.
Json previousManifest(const fs::path &dir) {
  std::ifstream in(dir / artifact_format::kManifestFile);
  if (!in) return Json();
  Json j = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("format") || j["format"] != artifact_format::kFormat)
    return Json();
  return j;
}

/// Entries of a previous artifact folder \p dir that fusec did not write:
/// anything but the regular files its manifest lists in "files" (artifacts
/// from before that list: the files every backend writes), and the
/// manifest itself. Recompiling replaces the folder whole, so these would
/// be lost: the writer refuses instead.
/// Every name the writer or a backend ever puts in an artifact folder
/// (writeArtifact refuses a backend file not listed). A previous manifest's
/// "files" list can only narrow this set, never widen it: the list is not
/// covered by the manifest digest or a checksum, so a list naming a user's
/// file (an artifact received from elsewhere, a rewritten manifest) must not
/// make recompiling delete it (red team s25 F2).
const std::set<std::string> &namesFusecWrites() {
  static const std::set<std::string> names = {artifact_format::kManifestFile, artifact_format::kWeightsFile,
                                              artifact_format::kFusionFile, "model.cu", "libmodel.so", "model.ll",
                                              "kernels.py", "run.py"};
  return names;
}

std::vector<std::string> foreignEntries(const fs::path &dir, const Json &manifest) {
  // The manifest is ours; with a "files" list, so are the names in it that
  // fusec writes (weights.bin and fusion.json included: a list that leaves
  // them out leaves a user's file of that name alone). Without one (an
  // artifact from before the list, or a list someone deleted), only the
  // names fusec writes for the previous manifest's target: a user's run.py
  // beside a cuda artifact, or a model.cu beside a cpu one, is not fusec's
  // (red team s26: both were deleted on recompile).
  std::set<std::string> ours = {artifact_format::kManifestFile};
  if (manifest.contains("files") && manifest["files"].is_array()) {
    for (const Json &f : manifest["files"])
      if (f.is_string() && namesFusecWrites().count(f.get<std::string>())) ours.insert(f.get<std::string>());
  } else {
    ours.insert(artifact_format::kWeightsFile);
    ours.insert(artifact_format::kFusionFile);
    const std::string target =
        manifest.contains("target") && manifest["target"].is_string() ? manifest["target"].get<std::string>() : "";
    if (target == "cpu") {
      for (const char *f : {"libmodel.so", "model.ll"}) ours.insert(f);
    } else if (target == "nki") {
      for (const char *f : {"kernels.py", "run.py"}) ours.insert(f);
    } else if (target.empty() || target == "cuda") {
      for (const char *f : {"model.cu", "libmodel.so"}) ours.insert(f);
    }
  }
  std::vector<std::string> foreign;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (!ours.count(name) || !e.is_regular_file(ec) || e.is_symlink(ec)) foreign.push_back(name);
  }
  std::sort(foreign.begin(), foreign.end());
  return foreign;
}

/// The file that marks a sibling folder as fusec's own while it exists
/// (ArtifactWriter.h: kOwnerMarkerFile, kOwnerMarkerText): a
/// "<out>.tmp-XXXXXX" being written (from its creation until just before it
/// becomes OUT) and a "<out>.old-XXXXXX" being deleted (the previous OUT,
/// marked once moved aside). Never part of an artifact.
constexpr const char *kOwnerMarker = kOwnerMarkerFile;

/// Writes kOwnerMarker into \p dir; false if it could not.
bool markOwned(const fs::path &dir) {
  std::ofstream f(dir / kOwnerMarker, std::ios::binary | std::ios::trunc);
  f << kOwnerMarkerText;
  return static_cast<bool>(f);
}

/// Whether \p dir is provably a folder fusec left: it holds kOwnerMarker, a
/// regular file with exactly kOwnerMarkerText, and nothing but regular files
/// (fusec writes no folder or link there). A folder someone else made with
/// a matching name (a backup "out.old-backup") has no marker and is kept.
bool isOwnedStaleFolder(const fs::path &dir) {
  std::error_code ec;
  const fs::path marker = dir / kOwnerMarker;
  const fs::file_status ms = fs::symlink_status(marker, ec);
  if (ec || !fs::is_regular_file(ms)) return false;
  std::ifstream f(marker, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text != kOwnerMarkerText) return false;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    const fs::file_status st = e.symlink_status(ec);
    if (ec || !fs::is_regular_file(st)) return false;
  }
  return !ec;
}

/// Removes \p out's stale sibling folders "<out>.tmp-XXXXXX" and
/// "<out>.old-XXXXXX" that an interrupted fusec left behind (six characters
/// of mkdtemp, a folder, not a link, and isOwnedStaleFolder). One fusec
/// writes one OUT at a time.
void removeStaleTemps(const fs::path &out) {
  std::error_code ec;
  const std::string base = out.filename().string();
  for (const auto &e : fs::directory_iterator(out.parent_path(), ec)) {
    std::string name = e.path().filename().string();
    for (const char *suffix : {".tmp-", ".old-"}) {
      std::string prefix = base + suffix;
      if (name.size() == prefix.size() + 6 && name.compare(0, prefix.size(), prefix) == 0 &&
          e.is_directory(ec) && !e.is_symlink(ec) && isOwnedStaleFolder(e.path()))
        fs::remove_all(e.path(), ec);
    }
  }
}

/// Applies the OUT rules of the file comment. \p out is absolute and normal.
absl::Status checkOutDir(const fs::path &out, const std::string &modelPath) {
  std::error_code ec;
  fs::file_status st = fs::symlink_status(out, ec);
  const bool exists = !ec && fs::exists(st);
  if (exists && fs::is_symlink(st))
    return absl::InvalidArgumentError(absl::StrCat(
        "output '", out.string(), "' is a symbolic link; give the real folder instead"));
  if (exists && !fs::is_directory(st))
    return absl::InvalidArgumentError(
        absl::StrCat("output '", out.string(), "' exists and is not a folder"));
  fs::path canon = fs::weakly_canonical(out, ec);
  if (ec) canon = out;
  fs::path cwd = fs::current_path(ec);
  if (!ec) {
    fs::path cwdCanon = fs::weakly_canonical(cwd, ec);
    if (!ec && isWithin(cwdCanon, canon))
      return absl::InvalidArgumentError(absl::StrCat(
          "refusing to replace '", out.string(), "': it is or contains the current directory"));
  }
  if (canon == canon.root_path())
    return absl::InvalidArgumentError(absl::StrCat("refusing to replace '", out.string(), "'"));
  if (!modelPath.empty()) {
    fs::path model = fs::weakly_canonical(fs::absolute(modelPath, ec), ec);
    if (!ec && isWithin(model, canon))
      return absl::InvalidArgumentError(
          absl::StrCat("refusing to replace '", out.string(), "': it contains the model '",
                       modelPath, "'; choose another output folder"));
  }
  if (exists) {
    const bool empty = fs::is_empty(out, ec);
    if (ec)
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read output folder '", out.string(), "': ", ec.message()));
    Json previous = empty ? Json() : previousManifest(out);
    if (!empty && !previous.is_object())
      return absl::InvalidArgumentError(absl::StrCat(
          "refusing to replace '", out.string(),
          "': it is a non-empty folder that does not hold a fusec artifact (no manifest.json with "
          "\"format\": \"fusec-artifact\"); choose a new or empty folder"));
    if (!empty) {
      std::vector<std::string> foreign = foreignEntries(out, previous);
      if (!foreign.empty())
        return absl::InvalidArgumentError(absl::StrCat(
            "refusing to replace '", out.string(), "': it holds ", foreign.size(),
            " entr", foreign.size() == 1 ? "y" : "ies", " fusec did not write (",
            absl::StrJoin(foreign, ", "),
            "), which replacing the artifact would delete; move them or choose another folder"));
    }
  }
  return absl::OkStatus();
}

/// \p manifest with "checksums" for the files of \p dir it names (the
/// weights file and the library, those that exist): 64-bit FNV-1a,
/// runtime/internal/Checksum.h, verified by the runtime's loader.
absl::StatusOr<std::string> withChecksums(const std::string &manifest, const fs::path &dir) {
  Json m = Json::parse(manifest, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object()) return absl::InternalError("the manifest the writer made is not an object");
  Json sums = Json::object();
  std::vector<std::string> checked;
  if (m.contains("library") && m["library"].is_string()) checked.push_back(m["library"]);
  if (m.contains("weights") && m["weights"].is_object() && m["weights"].contains("file"))
    checked.push_back(m["weights"]["file"]);
  for (const std::string &f : checked) {
    std::error_code ec;
    if (!fs::exists(dir / f, ec)) continue;  // e.g. the library when nvcc did not run
    std::string sum;
    if (!artifact_checksum::fileChecksum((dir / f).string(), sum))
      return absl::InternalError(absl::StrCat("cannot read '", (dir / f).string(), "'"));
    sums[f] = sum;
  }
  if (!sums.empty()) m["checksums"] = sums;
  // Every file the writer put in the folder, so that a later recompilation
  // can tell them from files a user added (foreignEntries).
  Json files = Json::array();
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.path().filename() != kOwnerMarker) names.push_back(e.path().filename().string());
  names.push_back(artifact_format::kManifestFile);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const std::string &n : names) files.push_back(n);
  m["files"] = files;
  return m.dump(2, ' ', true, Json::error_handler_t::replace) + "\n";
}

absl::Status writeFile(const fs::path &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (out) out.close();
  if (!out)
    return absl::InternalError(
        absl::StrCat("cannot write '", path.string(), "': ", std::strerror(errno)));
  return absl::OkStatus();
}

absl::Status writeWeights(const fs::path &path, const MemoryPlan &mem) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  int64_t pos = 0;
  static const char kZeros[kBufferAlignment] = {};
  for (int id : mem.weights) {
    const PlannedBuffer &b = mem.buffers[id];
    const ir::Tensor *t = b.value->constant();
    if (!t || t->byteSize() != b.bytes)
      return absl::InternalError(absl::StrCat("constant '", b.name, "' holds ",
                                              t ? t->byteSize() : 0, " bytes, its type says ",
                                              b.bytes));
    if (b.offset < pos) return absl::InternalError("weights overlap");
    out.write(kZeros, static_cast<std::streamsize>(b.offset - pos));
    out.write(reinterpret_cast<const char *>(t->data()), static_cast<std::streamsize>(b.bytes));
    pos = b.offset + b.bytes;
  }
  if (out) out.close();
  if (!out)
    return absl::InternalError(
        absl::StrCat("cannot write '", path.string(), "': ", std::strerror(errno)));
  return absl::OkStatus();
}

/// A temporary folder next to \p out: OUT<suffix>XXXXXX.
absl::StatusOr<fs::path> makeSiblingTemp(const fs::path &out, const char *suffix) {
  std::string pattern = absl::StrCat(out.string(), suffix, "XXXXXX");
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    return absl::InternalError(absl::StrCat("cannot create a temporary folder next to '",
                                            out.string(), "': ", std::strerror(errno)));
  fs::path p(buf.data());
  std::error_code ec;
  fs::permissions(p, fs::perms(0755), ec);
  return p;
}

/// Removes \p dir on scope exit unless released.
class TempDirGuard {
 public:
  explicit TempDirGuard(fs::path dir) : dir_(std::move(dir)) {}
  ~TempDirGuard() {
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }
  void release() { dir_.clear(); }

 private:
  fs::path dir_;
};

}  // namespace

absl::StatusOr<std::string> manifestJson(const MemoryPlan &mem, const std::vector<std::string> &kernelNames,
                         const std::string &modelName, const std::string &target,
                         const std::string &arch, const std::string &library,
                         const std::vector<std::pair<std::string, std::string>> &backendFields) {
  Json m;
  m["format"] = artifact_format::kFormat;
  m["version"] = artifact_format::kVersion;
  m["model"] = modelName;
  m["target"] = target;
  m["arch"] = arch;
  for (const auto &[key, text] : backendFields) {
    if (m.contains(key)) continue;  // the writer's own fields win
    Json v = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    m[key] = v.is_discarded() ? Json(text) : v;
  }
  if (!library.empty()) m["library"] = library;
  if (!mem.weights.empty()) m["weights"] = Json{{"file", artifact_format::kWeightsFile}, {"bytes", mem.weightsBytes}};
  m["arena_bytes"] = mem.arenaBytes;
  Json buffers = Json::array();
  for (const PlannedBuffer &b : mem.buffers) buffers.push_back(bufferJson(b));
  m["buffers"] = std::move(buffers);
  Json inputs = Json::array(), outputs = Json::array();
  for (int id : mem.inputs) inputs.push_back(tensorJson(mem.buffers[id]));
  for (int id : mem.outputs) outputs.push_back(tensorJson(mem.buffers[id]));
  m["inputs"] = std::move(inputs);
  m["outputs"] = std::move(outputs);
  Json steps = Json::array();
  for (const Step &s : mem.steps) {
    FUSEC_ASSIGN_OR_RETURN(Json step, stepJson(mem, s));
    steps.push_back(std::move(step));
  }
  for (const MemoryPlan::Copy &c : mem.copies)
    steps.push_back(Json{{"kind", artifact_format::kStepCopy}, {"name", c.name}, {"src", c.src}, {"dst", c.dst},
                         {"bytes", bytesJson(mem.buffers[c.dst])}});
  m["steps"] = std::move(steps);
  m["kernels"] = kernelNames;
  // Names come from the model: dump() must not throw on invalid UTF-8, and
  // ensure_ascii writes every control and bidi control (any non-ASCII) as
  // \uXXXX, so that no raw one reaches a terminal that shows the manifest.
  return m.dump(2, ' ', true, Json::error_handler_t::replace) + "\n";
}

absl::Status checkStaticShapes(const ir::Graph &graph) {
  std::vector<std::string> bad, examples;
  for (const ir::Value *v : graph.inputs()) {
    if (v->isConstant()) continue;
    const ir::TensorType &t = v->type();
    if (t.rankKnown && t.isStatic()) continue;
    bad.push_back(absl::StrCat("input '", v->name(), "' has shape ", t.str()));
    if (!t.rankKnown) {
      examples.push_back(absl::StrCat(v->name(), "=<dims>"));
      continue;
    }
    std::vector<std::string> dims;
    for (const ir::Dim &d : t.shape)
      dims.push_back(d.isStatic() ? std::to_string(d.value)
                                  : absl::StrCat("<", d.isSymbolic() ? d.symbol : "?", ">"));
    examples.push_back(absl::StrCat(v->name(), "=", absl::StrJoin(dims, "x")));
  }
  if (!bad.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        "shapes must be static for an artifact (format version 1): ", absl::StrJoin(bad, "; "),
        ". Bind the dims with --shape, e.g. --shape ", absl::StrJoin(examples, " --shape ")));
  // Every static tensor must have a byte size that int64 arithmetic (arena
  // offsets, launch grids) represents exactly; 2^46 bytes = 64 TiB.
  constexpr int64_t kMaxBytes = int64_t{1} << 46;
  auto tooLarge = [&](const ir::Value *v) {
    const ir::TensorType &t = v->type();
    if (!t.rankKnown || !t.isStatic()) return false;
    int64_t bytes = std::max<int64_t>(1, ir::dtypeSize(t.dtype));
    for (const ir::Dim &d : t.shape) {
      if (d.value == 0) return false;
      if (bytes > kMaxBytes / d.value) return true;
      bytes *= d.value;
    }
    return false;
  };
  for (const ir::Value *v : graph.inputs())
    if (tooLarge(v))
      return absl::InvalidArgumentError(absl::StrCat("input '", v->name(), "' of type ", v->type().str(),
                                                     " is larger than 64 TiB"));
  for (const ir::Node *n : graph.nodes())
    for (const ir::Value *v : n->outputs())
      if (tooLarge(v))
        return absl::InvalidArgumentError(absl::StrCat("value '", v->name(), "' of ", n->describe(),
                                                       " has type ", v->type().str(),
                                                       ", larger than 64 TiB"));
  for (const ir::Value *v : graph.outputs()) {
    if (v && !(v->type().rankKnown && v->type().isStatic()))
      return absl::InvalidArgumentError(
          absl::StrCat("output '", v->name(), "'",
                       v->producer() ? absl::StrCat(" of ", v->producer()->describe()) : std::string(),
                       " has non-static shape ", v->type().str(),
                       " after binding the inputs; shapes must be static for an artifact"));
  }
  return absl::OkStatus();
}

namespace {

/// Graph inputs whose values, not only their shapes, an artifact needs at
/// compile time: those that reach a metadata operand (ir::isMetadataOperand:
/// axes, pads, scales, sizes, k, depth, ...) or an operand of Range (a
/// window length) that is still not a constant after the passes, when every
/// graph input it depends on has a static shape. Ops whose result shape
/// depends on tensor data (NonZero, Unique, ...) are not counted: binding
/// their data would fold the model away. Such a model compiles once those inputs are bound with
/// --input-value; this names them, and the operands they decide, instead of
/// the refusal of the first kernel that meets one. Inputs of symbolic shape
/// are left to checkStaticShapes (bind them with --shape).
absl::Status checkCompileTimeValues(const ir::Graph &graph) {
  std::set<const ir::Value *> graphInputs(graph.inputs().begin(), graph.inputs().end());
  // The graph inputs \p v depends on (memoised; iterative, graphs can be deep).
  std::map<const ir::Value *, std::set<const ir::Value *>> memo;
  auto inputsOf = [&](const ir::Value *root) -> const std::set<const ir::Value *> & {
    std::vector<std::pair<const ir::Value *, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [v, expanded] = stack.back();
      stack.pop_back();
      if (memo.count(v)) continue;
      const ir::Node *p = v->producer();
      if (v->isConstant() || !p) {
        memo[v] = graphInputs.count(v) ? std::set<const ir::Value *>{v} : std::set<const ir::Value *>{};
        continue;
      }
      if (!expanded) {
        stack.push_back({v, true});
        for (const ir::Value *in : p->inputs())
          if (in && !memo.count(in)) stack.push_back({in, false});
        continue;
      }
      std::set<const ir::Value *> all;
      for (const ir::Value *in : p->inputs())
        if (in) all.insert(memo[in].begin(), memo[in].end());
      memo[v] = std::move(all);
    }
    return memo[root];
  };
  std::set<const ir::Value *> needed;
  std::vector<std::string> uses;
  auto note = [&](const ir::Value *v, std::string use) {
    const std::set<const ir::Value *> &ins = inputsOf(v);
    bool allStatic = !ins.empty();
    for (const ir::Value *in : ins) allStatic &= in->type().rankKnown && in->type().isStatic();
    if (!allStatic) return;
    needed.insert(ins.begin(), ins.end());
    if (uses.size() < 4) uses.push_back(std::move(use));
  };
  for (const ir::Node *n : graph.nodes()) {
    // Range's start, limit and delta decide its length (window functions
    // expand into one), as the metadata operands decide their op's shape.
    const bool range = n->kind() == ir::OpKind::kRange;
    // Their own refusals say more: Dropout's training_mode must be false
    // (inference only), and NonMaxSuppression's result length depends on
    // the boxes whatever its limits are.
    if (n->kind() == ir::OpKind::kDropout || n->kind() == ir::OpKind::kNonMaxSuppression) continue;
    for (int i = 0; i < n->numInputs(); ++i) {
      const ir::Value *in = n->input(i);
      if (in && !in->isConstant() && (range || ir::isMetadataOperand(n->kind(), i)))
        note(in, absl::StrCat("input ", i, " of ", n->describe()));
    }
  }
  if (needed.empty()) return absl::OkStatus();
  std::vector<std::string> names;
  for (const ir::Value *in : graph.inputs())
    if (needed.count(in)) names.push_back(absl::StrCat("'", in->name(), "'"));
  return absl::InvalidArgumentError(absl::StrCat(
      "the artifact needs the value of graph input", names.size() == 1 ? " " : "s ",
      absl::StrJoin(names, ", "), " at compile time (it decides ", absl::StrJoin(uses, "; "),
      uses.size() >= 4 ? "; ..." : "",
      "): fusec compiles such operands as constants. Bind ", names.size() == 1 ? "it" : "each",
      " with --input-value NAME=@FILE.pb (a TensorProto) or NAME=v1,v2,...; the artifact then "
      "has no such input"));
}

}  // namespace

std::string boundValueDigest(const ir::Tensor &t) {
  return artifact_checksum::bytesChecksum(t.data(), static_cast<size_t>(t.byteSize()));
}

absl::Status writeArtifact(const ir::Graph &graph, const passes::FusionPlan &plan,
                           const passes::TargetSpec &target, const ArtifactOptions &opts,
                           const std::string &outDir, ArtifactSummary *summary) {
  ArtifactSummary localSummary;
  ArtifactSummary &sum = summary ? *summary : localSummary;
  sum = ArtifactSummary();

  FUSEC_ASSIGN_OR_RETURN(const codegen::Backend *backend, codegen::backendFor(opts.target));
  // Before the kernels' refusals: an operand fusec needs as a constant that
  // comes from a graph input is fixed by binding that input.
  FUSEC_RETURN_IF_ERROR(checkCompileTimeValues(graph));
  // The one legality rule: a kernel the fusion pass found the lowering
  // refuses (shown in --dump-fusion) stops the compile before any file.
  // Every refused kernel is named at once, as unsupported ops are.
  if (const std::vector<const passes::Kernel *> refused = passes::refusedKernels(plan); !refused.empty()) {
    auto one = [](const passes::Kernel *k) {
      return absl::StrCat("kernel '", k->name, "' (", absl::StrJoin(k->ops, ", "),
                          ") cannot be lowered: ", k->refused);
    };
    if (refused.size() == 1) return absl::UnimplementedError(absl::StrCat(opts.target, ": ", one(refused[0])));
    std::string msg = absl::StrCat(opts.target, ": ", refused.size(), " kernels cannot be lowered:");
    for (const passes::Kernel *k : refused) absl::StrAppend(&msg, "\n  ", one(k));
    return absl::UnimplementedError(msg);
  }
  // fp16 / bf16: the pipeline's lower-precision pass has already retyped
  // the graph (passes/PrecisionLowering.cpp); the writer emits what it gets.
  if (!opts.precision.empty() && opts.precision != "fp32" && opts.precision != "fp16" &&
      opts.precision != "bf16")
    return absl::InvalidArgumentError(
        absl::StrCat("unknown precision '", opts.precision, "' (fp32, fp16 or bf16)"));
  FUSEC_ASSIGN_OR_RETURN(const std::string arch, backend->resolveArch(opts.arch, target));
  if (outDir.empty() && !opts.checkOnly) return absl::InvalidArgumentError("no output folder given");

  std::error_code ec;
  fs::path out;
  if (!opts.checkOnly) {
    out = fs::absolute(outDir, ec);
    if (ec)
      return absl::InvalidArgumentError(
          absl::StrCat("bad output folder '", outDir, "': ", ec.message()));
    out = out.lexically_normal();
    if (!out.has_filename() && out.has_parent_path() && out != out.root_path())
      out = out.parent_path();  // "out/" -> "out"
    FUSEC_RETURN_IF_ERROR(checkOutDir(out, opts.modelPath));
  }
  FUSEC_RETURN_IF_ERROR(checkStaticShapes(graph));
  if (graph.outputs().empty())
    return absl::InvalidArgumentError("the graph has no outputs; nothing to compile");

  // Everything that can fail on the model happens before touching the disk.
  codegen::BackendOptions bopts;
  bopts.arch = arch;
  bopts.device = target;
  bopts.allowTf32 = opts.allowTf32;
  bopts.modelName = opts.modelName.empty() ? graph.name() : opts.modelName;
  bopts.buildLibrary = opts.runNvcc;
  bopts.toolPath = opts.nvccPath;
  bopts.emitIr = opts.emitIr;
  bopts.probes = opts.probes;
  bopts.checkOnly = opts.checkOnly;
  if (opts.checkOnly) bopts.buildLibrary = false;
  FUSEC_ASSIGN_OR_RETURN(codegen::BackendModule mod,
                         backend->emit(graph, passes::kernelNames(plan), bopts));
  const std::vector<std::string> kernelNames = mod.kernelNames;
  FUSEC_ASSIGN_OR_RETURN(MemoryPlan mem, planMemory(graph, mod.steps));
  if (opts.probes) {
    // Dynamic shapes: every buffer's shape as the symbols give it.
    FUSEC_ASSIGN_OR_RETURN(auto shapes, program::fitValueShapes(*opts.probes));
    for (PlannedBuffer &b : mem.buffers) {
      auto it = shapes.find(b.name);
      if (it == shapes.end() || it->second.size() != b.shape.size())
        return absl::InternalError(absl::StrCat("dynamic shapes: no symbolic shape for buffer '", b.name, "'"));
      b.symbolicShape = it->second;
    }
    for (const PlannedBuffer &b : mem.buffers)
      if (b.storage == program::Storage::kWeight)
        for (const SymExtent &e : b.symbolicShape)
          if (!e.isConstant())
            return absl::FailedPreconditionError(absl::StrCat(
                "dynamic shapes: weight '", b.name, "' has a shape that depends on the binding; bind with --shape"));
  }
  if (opts.checkOnly) return absl::OkStatus();
  const std::string &modelName = bopts.modelName;
  const bool usesLibrary = needsLibrary(mem, mod.libraryRunsLibraryCalls);
  for (const auto &f : mod.manifestFields)
    for (const char *own : {"format", "version", "model", "target", "arch", "library", "weights", "arena_bytes",
                            "buffers", "inputs", "outputs", "steps", "kernels", "checksums", "files",
                            "library_build", "bound_inputs", "symbols"})
      if (f.first == own)
        return absl::InternalError(absl::StrCat(backend->name(), ": backend manifest field '", f.first,
                                                "' is one the writer owns"));
  FUSEC_ASSIGN_OR_RETURN(std::string manifest,
                         manifestJson(mem, kernelNames, modelName, backend->name(), arch,
                                      usesLibrary ? mod.library : std::string(), mod.manifestFields));
  // A library the user builds from the sources afterwards (--no-nvcc) can
  // have no checksum here; the manifest says so, and the field is part of the
  // digest the library records (docs/ARTIFACT.md).
  if (usesLibrary && mod.libraryBuiltByHand) {
    Json m = Json::parse(manifest, nullptr, /*allow_exceptions=*/false);
    if (!m.is_object()) return absl::InternalError("the manifest the writer made is not an object");
    m["library_build"] = "by hand";
    manifest = m.dump(2);
  }
  if (!opts.boundInputs.empty()) {
    Json m = Json::parse(manifest, nullptr, /*allow_exceptions=*/false);
    if (!m.is_object()) return absl::InternalError("the manifest the writer made is not an object");
    Json list = Json::array();
    for (const BoundInput &b : opts.boundInputs)
      list.push_back({{"name", b.name}, {"dtype", b.dtype}, {"shape", b.shape}, {"digest", b.digest}});
    m["bound_inputs"] = std::move(list);
    manifest = m.dump(2);
  }
  if (opts.probes) {
    Json m = Json::parse(manifest, nullptr, /*allow_exceptions=*/false);
    if (!m.is_object()) return absl::InternalError("the manifest the writer made is not an object");
    Json list = Json::array();
    for (const program::ShapeSymbol &sym : opts.probes->symbols) {
      Json j = {{"name", sym.name}, {"min", sym.min}, {"max", sym.max}};
      if (sym.opt) j["opt"] = sym.opt;
      list.push_back(std::move(j));
    }
    m["symbols"] = std::move(list);
    manifest = m.dump(2);
  }
  // The library records the digest of this manifest (ArtifactFormat.h): put
  // it where the backend left the placeholder, in its sources or object.
  {
    const std::string digest = artifact_checksum::manifestDigest(
        Json::parse(manifest, nullptr, /*allow_exceptions=*/false));
    const std::string placeholder = artifact_format::kManifestDigestPlaceholder;
    int found = 0;
    auto substitute = [&](std::string &text) {
      for (size_t at = text.find(placeholder); at != std::string::npos;
           at = text.find(placeholder, at + placeholder.size())) {
        text.replace(at, placeholder.size(), digest);
        ++found;
      }
    };
    for (auto &file : mod.files) substitute(file.second);
    substitute(mod.buildInput);
    if (mod.recordsManifestDigest && found == 0)
      return absl::InternalError(absl::StrCat(backend->name(), ": the library defines ",
                                              artifact_format::kManifestDigestSymbol, " nowhere"));
  }
  const std::string fusionJson =
      opts.fusionJson.empty() ? passes::fusionPlanToJson(plan, target) : opts.fusionJson;

  sum.nvccCommand = mod.buildCommand;
  sum.arenaBytes = mem.arenaBytes;
  sum.arenaNaiveBytes = mem.arenaNaiveBytes;
  sum.weightsBytes = mem.weightsBytes;
  sum.numSteps = static_cast<int>(mem.steps.size() + mem.copies.size());
  for (const Step &s : mem.steps) sum.numGuardedSteps += s.guard.empty() ? 0 : 1;
  for (size_t i = 0; i < mem.steps.size();) {
    size_t j = i;
    while (j + 1 < mem.steps.size() && mem.steps[j + 1].guard == mem.steps[i].guard) ++j;
    if (!mem.steps[i].guard.empty())
      sum.guardedRanges.push_back(absl::StrCat(
          "condition known at run time: ", i == j ? absl::StrCat("step ", i) : absl::StrCat("steps ", i, "..", j),
          " (", mem.steps[i].name, i == j ? "" : absl::StrCat("..", mem.steps[j].name), ") run ",
          ir::describeGuard(mem.steps[i].guard)));
    i = j + 1;
  }
  sum.numKernels = mod.numKernels;
  sum.memorySummary = mem.summary();

  // Write into a sibling temporary folder.
  fs::create_directories(out.parent_path(), ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot create '", out.parent_path().string(),
                                            "': ", ec.message()));
  removeStaleTemps(out);
  FUSEC_ASSIGN_OR_RETURN(fs::path tmp, makeSiblingTemp(out, ".tmp-"));
  TempDirGuard guard(tmp);
  if (!markOwned(tmp))
    return absl::InternalError(absl::StrCat("cannot write into '", tmp.string(), "'"));
  for (const auto &[name, contents] : mod.files) {
    if (!namesFusecWrites().count(name))
      return absl::InternalError(absl::StrCat(backend->name(), ": writes '", name,
                                              "', which is not in the writer's list of artifact file names"));
    FUSEC_RETURN_IF_ERROR(writeFile(tmp / name, contents));
  }
  FUSEC_RETURN_IF_ERROR(writeWeights(tmp / artifact_format::kWeightsFile, mem));
  FUSEC_RETURN_IF_ERROR(writeFile(tmp / artifact_format::kFusionFile, fusionJson));

  if (!usesLibrary) {
    sum.warnings.push_back(absl::StrCat("no step calls the library: ", mod.library,
                                        " is not needed and was not built"));
  } else {
    codegen::BuildOutcome built;
    FUSEC_RETURN_IF_ERROR(backend->build(mod, tmp.string(), out.string(), bopts, &built));
    for (std::string &w : built.warnings) sum.warnings.push_back(std::move(w));
    sum.builtLibrary = built.built;
  }
  // The manifest comes last: it records the checksums of the weights and of
  // the library (when built), which the runtime verifies at load.
  FUSEC_ASSIGN_OR_RETURN(std::string finalManifest, withChecksums(manifest, tmp));
  FUSEC_RETURN_IF_ERROR(writeFile(tmp / artifact_format::kManifestFile, finalManifest));
  // Unmarked from here: if interrupted, the folder is kept (not provably stale).
  fs::remove(tmp / kOwnerMarker, ec);

  // Swap the folders: old OUT away, new into place, old deleted.
  if (fs::exists(fs::symlink_status(out, ec))) {
    FUSEC_ASSIGN_OR_RETURN(fs::path old, makeSiblingTemp(out, ".old-"));
    fs::remove(old, ec);
    fs::rename(out, old, ec);
    if (ec)
      return absl::InternalError(
          absl::StrCat("cannot move the old '", out.string(), "' aside: ", ec.message()));
    markOwned(old);  // unmarked, an interrupted deletion leaves it (kept, not lost)
    fs::rename(tmp, out, ec);
    if (ec) {
      std::error_code ec2;
      fs::rename(old, out, ec2);
      return absl::InternalError(absl::StrCat("cannot move '", tmp.string(), "' to '",
                                              out.string(), "': ", ec.message()));
    }
    guard.release();
    fs::remove_all(old, ec);
    if (ec)
      sum.warnings.push_back(
          absl::StrCat("could not delete the old artifact '", old.string(), "': ", ec.message()));
  } else {
    fs::rename(tmp, out, ec);
    if (ec)
      return absl::InternalError(absl::StrCat("cannot move '", tmp.string(), "' to '",
                                              out.string(), "': ", ec.message()));
    guard.release();
  }
  return absl::OkStatus();
}

}  // namespace fusec::artifact
