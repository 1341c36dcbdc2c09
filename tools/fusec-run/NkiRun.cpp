//===- NkiRun.cpp - fusec-run OUT --data DIR for an NKI artifact --------===//
#include "tools/fusec-run/NkiRun.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/OnnxImporter.h"
#include "ir/DType.h"
#include "interp/Compare.h"
#include "support/Escape.h"

namespace fusec::tools {
namespace {

namespace fs = std::filesystem;

int fail(const std::string &artifactDir, const std::string &msg) {
  std::fprintf(stderr, "fusec-run: error: %s\n", printableLines(msg).c_str());
  std::printf("FAIL %s: %s\n", printable(artifactDir).c_str(), printable(msg).c_str());
  return 1;
}

/// Runs python3 run.py with PYTHONPATH = the NKI model folder first;
/// \returns its exit status (127 when python3 cannot be started).
int runPython(const std::string &runPy, const std::string &dataDir, const std::string &outDir) {
  pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    const char *model = std::getenv("FUSEC_NKI_MODEL");
    std::string path = model ? model : FUSEC_NKI_MODEL_DIR;
    if (const char *old = std::getenv("PYTHONPATH"); old && *old) path = absl::StrCat(path, ":", old);
    setenv("PYTHONPATH", path.c_str(), 1);
    // stdout of the child goes to stderr: fusec-run's stdout is its verdict.
    dup2(2, 1);
    std::vector<std::string> args = {"python3", runPy, "--data", dataDir, "--out", outDir};
    std::vector<char *> argv;
    for (std::string &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp("python3", argv.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) absl::StrAppend(&out, i ? "," : "", s[i]);
  return out + "]";
}

}  // namespace

absl::Status checkNkiInputs(const std::string &artifactDir, const std::string &dataDir) {
  const fs::path manifestPath = fs::path(artifactDir) / "manifest.json";
  std::ifstream in(manifestPath);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read '", manifestPath.string(), "'"));
  nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("inputs") ||
      !manifest["inputs"].is_array())
    return absl::InvalidArgumentError(
        absl::StrCat("'", manifestPath.string(), "' is not an artifact manifest (no \"inputs\" list)"));
  std::vector<std::pair<std::string, ir::Tensor>> data;
  for (int i = 0;; ++i) {
    fs::path p = fs::path(dataDir) / absl::StrCat("input_", i, ".pb");
    std::error_code ec;
    if (!fs::exists(p, ec)) break;
    std::string name;
    absl::StatusOr<ir::Tensor> t = frontend::loadTensorProtoFile(p.string(), &name);
    if (!t.ok()) return t.status();
    data.emplace_back(name, std::move(*t));
  }
  const nlohmann::json &inputs = manifest["inputs"];
  for (size_t i = 0; i < inputs.size(); ++i) {
    const nlohmann::json &slot = inputs[i];
    if (!slot.is_object() || !slot.value("name", nlohmann::json()).is_string() ||
        !slot.value("dtype", nlohmann::json()).is_string() || !slot.value("shape", nlohmann::json()).is_array())
      return absl::InvalidArgumentError(absl::StrCat("manifest input ", i, " lacks a name, dtype or shape"));
    const std::string name = slot["name"].get<std::string>();
    const std::string dtype = slot["dtype"].get<std::string>();
    std::vector<int64_t> shape;
    for (const nlohmann::json &d : slot["shape"]) {
      if (!d.is_number_integer())
        return absl::InvalidArgumentError(absl::StrCat("manifest input '", name, "' has a non-integer dim"));
      shape.push_back(d.get<int64_t>());
    }
    // Matched by name, else by position (as run.py and the GPU path do).
    const ir::Tensor *t = nullptr;
    for (const auto &[n, tensor] : data)
      if (!n.empty() && n == name) t = &tensor;
    if (!t && i < data.size()) t = &data[i].second;
    if (!t)
      return absl::InvalidArgumentError(
          absl::StrCat("no data for input ", i, " '", name, "' in '", dataDir, "'"));
    if (ir::dtypeName(t->dtype()) != dtype)
      return absl::InvalidArgumentError(absl::StrCat("input '", name, "': data has dtype ",
                                                     ir::dtypeName(t->dtype()), ", the artifact wants ", dtype,
                                                     " (no conversion is done)"));
    if (t->shape() != shape)
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "': data has shape ", shapeStr(t->shape()), ", the artifact was compiled for ",
          shapeStr(shape), " (recompile with --shape to change it)"));
  }
  return absl::OkStatus();
}

bool isNkiArtifact(const std::string &artifactDir) {
  std::ifstream in(fs::path(artifactDir) / "manifest.json");
  std::stringstream text;
  text << in.rdbuf();
  static const std::regex target("\"target\"\\s*:\\s*\"nki\"");
  return std::regex_search(text.str(), target);
}

int runNkiArtifact(const std::string &artifactDir, const std::string &dataDir, double atol, double rtol) {
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec) / absl::StrCat("fusec-nki-run-", getpid());
  fs::remove_all(tmp, ec);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } cleanup{tmp};
  if (absl::Status st = checkNkiInputs(artifactDir, dataDir); !st.ok())
    return fail(artifactDir, std::string(st.message()));
  const std::string runPy = (fs::absolute(artifactDir, ec) / "run.py").string();
  int rc = runPython(runPy, fs::absolute(dataDir, ec).string(), tmp.string());
  if (rc == 127) return fail(artifactDir, "cannot run python3 (needed for an nki artifact's run.py)");
  if (rc != 0) return fail(artifactDir, absl::StrCat("run.py failed (exit status ", rc, ")"));
  bool allPass = true;
  int n = 0;
  for (;; ++n) {
    fs::path want = fs::path(dataDir) / absl::StrCat("output_", n, ".pb");
    if (!fs::exists(want, ec)) break;
    std::string name;
    auto expected = frontend::loadTensorProtoFile(want.string(), &name);
    if (!expected.ok()) return fail(artifactDir, std::string(expected.status().message()));
    auto got = frontend::loadTensorProtoFile((tmp / absl::StrCat("output_", n, ".pb")).string());
    if (!got.ok())
      return fail(artifactDir, absl::StrCat("run.py wrote no output ", n, ": ", got.status().message()));
    interp::Tolerance tol = interp::defaultTolerance(expected->dtype());
    if (atol >= 0) tol.atol = atol;
    if (rtol >= 0) tol.rtol = rtol;
    interp::CompareResult r = interp::compareTensors(*got, *expected, &tol);
    std::printf("output %d '%s' %s: max abs err %.3g, max rel err %.3g (atol %g, rtol %g) %s%s%s\n", n,
                printable(name).c_str(), ir::dtypeName(expected->dtype()), r.maxAbsError, r.maxRelError,
                tol.atol, tol.rtol, r.pass ? "ok" : "MISMATCH", r.pass ? "" : ": ", r.message.c_str());
    allPass = allPass && r.pass;
  }
  if (n == 0) return fail(artifactDir, absl::StrCat("no output_0.pb in '", dataDir, "'"));
  std::printf("%s %s (nki, NumPy model of NKI)\n", allPass ? "PASS" : "FAIL", printable(artifactDir).c_str());
  return allPass ? 0 : 1;
}

}  // namespace fusec::tools
