//===- NkiTestUtil.h - Running printed NKI kernels on the NumPy model -*- C++ -*-===//
//
// Shared by the NKI unit tests: the device limits of the built-in Trainium
// targets, and EXPECT_RUNS(kernel, check), which executes a printed
// @nki.jit function and Python that calls it and asserts, with python3 on
// python/nki_model (the project's NumPy model of NKI). Tests that execute
// are skipped when python3 or numpy is missing.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_NKI_NKITESTUTIL_H
#define FUSEC_TEST_UNIT_NKI_NKITESTUTIL_H

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "codegen/nki/NkiKernel.h"
#include "gtest/gtest.h"
#include "passes/cost/TargetSpec.h"

namespace fusec::codegen::nki {

/// The partition limits of built-in device \p name (targets/<name>.textproto).
inline Limits builtinLimits(const std::string &name) {
  absl::StatusOr<passes::TargetSpec> t = passes::loadBuiltinTarget(name);
  return t.ok() ? t->partitioned : Limits();
}
inline const Limits &trn2() {
  static const Limits l = builtinLimits("trn2");
  return l;
}
inline const Limits &trn1() {
  static const Limits l = builtinLimits("trn1");
  return l;
}

inline bool havePython() {
  static const bool ok = std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return ok;
}

/// Runs \p kernel (the printed @nki.jit function) followed by \p check (Python
/// that calls it and asserts) through the NumPy model; \returns the output.
inline std::string runPython(const std::string &kernel, const std::string &check, int *status) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / absl::StrCat("fusec-nki-test-", getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::path py = dir / "k.py";
  {
    std::ofstream out(py);
    out << "import numpy as np\nimport nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n"
        << kernel << "\n\n" << check << "\nprint('OK')\n";
  }
  std::string cmd = absl::StrCat("PYTHONPATH=", FUSEC_NKI_MODEL_DIR, " python3 ", py.string(), " 2>&1");
  std::string output;
  if (FILE *p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  } else {
    *status = -1;
  }
  std::filesystem::remove_all(dir);
  return output;
}

#define EXPECT_RUNS(kernel, check)                              \
  do {                                                          \
    if (!havePython()) GTEST_SKIP() << "python3 with numpy not found"; \
    int status = 0;                                             \
    std::string out = runPython(kernel, check, &status);       \
    EXPECT_EQ(status, 0) << out << "\n" << kernel;              \
    EXPECT_TRUE(absl::StrContains(out, "OK")) << out;           \
  } while (0)

}  // namespace fusec::codegen::nki

#endif  // FUSEC_TEST_UNIT_NKI_NKITESTUTIL_H
