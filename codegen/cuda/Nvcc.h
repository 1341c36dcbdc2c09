//===- Nvcc.h - Finding and running nvcc for the artifact's libmodel.so -*- C++ -*-===//
//
// The artifact's libmodel.so is model.cu built as a shared library:
//   nvcc -O3 -std=c++17 -arch=<arch> -shared -Xcompiler -fPIC --cudart shared
//        -o libmodel.so model.cu
// (--cudart shared so that the library and libfusert share one CUDA runtime,
// docs/RUNTIME.md "Notes for the code generator"). Commands run without a
// shell (fork + execv), so paths need no quoting; shellQuote() only renders
// the command for messages.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_CODEGEN_CUDA_NVCC_H
#define FUSEC_CODEGEN_CUDA_NVCC_H

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace fusec::codegen {

/// Locates nvcc: \p hint if non-empty (returned as is, even if missing, so
/// that running it reports the path), else the first executable "nvcc" on
/// $PATH, else $CUDA_HOME/bin/nvcc, else /usr/local/cuda/bin/nvcc.
/// \returns "" when none is found.
std::string findNvcc(const std::string &hint);

/// The argv that builds \p output from \p source for \p arch ("sm_90"), with
/// \p nvcc as argv[0]. Relative paths are relative to the working directory
/// the command runs in.
std::vector<std::string> nvccCommand(const std::string &nvcc, const std::string &arch,
                                     const std::string &source, const std::string &output);

/// Renders \p argv as one POSIX shell command line (arguments quoted only
/// where needed).
std::string shellQuote(const std::vector<std::string> &argv);

/// Runs \p argv (argv[0] is a path or a name looked up on $PATH) in
/// \p workDir with stdin from /dev/null; stdout and stderr together land in
/// \p output. \returns OK iff it exited with status 0.
/// Errors: NotFound if argv[0] cannot be executed; Internal for a non-zero
/// exit or a signal (the message gives the command and the status, not the
/// output; \p output has that).
absl::Status runCommand(const std::vector<std::string> &argv, const std::string &workDir,
                        std::string *output);

}  // namespace fusec::codegen

#endif  // FUSEC_CODEGEN_CUDA_NVCC_H
