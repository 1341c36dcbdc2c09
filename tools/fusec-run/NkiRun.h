//===- NkiRun.h - fusec-run OUT --data DIR for an NKI artifact ---*- C++ -*-===//
//
// An artifact compiled with --target nki (manifest "target": "nki") is run
// by its own host driver: `python3 OUT/run.py --data DIR --out TMP` with the
// project's NumPy model of NKI (python/nki_model) put first on PYTHONPATH
// (FUSEC_NKI_MODEL overrides the folder; on a Trainium machine the Neuron
// SDK's `nki` can be used by setting it to an empty folder). The outputs it
// writes (TMP/output_<i>.pb) are compared with DIR/output_<i>.pb exactly as
// for a CUDA artifact (interp/Compare.h), with the same lines and verdict.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TOOLS_FUSEC_RUN_NKIRUN_H
#define FUSEC_TOOLS_FUSEC_RUN_NKIRUN_H

#include <string>

#include "absl/status/status.h"

namespace fusec::tools {

/// Checks the data of \p dataDir (input_<i>.pb, matched to the manifest's
/// "inputs" by name, else by position) against the manifest of
/// \p artifactDir: each input present, with the dtype ("f32", ...) and
/// shape it was compiled for (no conversion is done), so that run.py never
/// sees data it cannot bind. Errors: InvalidArgument naming the input and
/// what differs, in the words of the GPU path (GpuRun.cpp); NotFound or
/// InvalidArgument for a missing or malformed manifest or data file.
absl::Status checkNkiInputs(const std::string &artifactDir, const std::string &dataDir);

/// True when \p artifactDir's manifest.json says "target": "nki".
bool isNkiArtifact(const std::string &artifactDir);

/// Runs the NKI artifact in \p artifactDir against \p dataDir (see the file
/// comment). \p atol / \p rtol < 0 select the per-dtype defaults.
/// \returns 0 on PASS, 1 on FAIL or any error (python3 missing, run.py
/// failing, missing or mismatched outputs).
int runNkiArtifact(const std::string &artifactDir, const std::string &dataDir, double atol = -1,
                   double rtol = -1);

}  // namespace fusec::tools

#endif  // FUSEC_TOOLS_FUSEC_RUN_NKIRUN_H
