#!/bin/sh
# package-gpu-run.sh BUILD_DIR: packages ArtifactGpuTest, its non-CUDA shared
# libraries (Debian abseil/protobuf/onnx, libfusert), the shared models' test
# data and their artifacts (compiled here with nvcc) into BUILD_DIR/device, so
# that a GPU machine without the build dependencies can run
#   sh BUILD_DIR/device/run.sh
# (FUSEC_ARTIFACT_PREBUILT mode of ArtifactGpuTest: load, run, compare, bench).
set -e
build=$(cd "$1" && pwd)
models=${FUSEC_SHARED_MODELS:-$(cd "$(dirname "$0")/../../../.." && pwd)/shared/models}
dev=$build/device
rm -rf "$dev"
mkdir -p "$dev/lib" "$dev/models" "$dev/artifacts"
FUSEC_SHARED_MODELS=$models FUSEC_ARTIFACT_KEEP=$dev/artifacts "$build/bin/ArtifactGpuTest" >/dev/null
strip -o "$dev/ArtifactGpuTest" "$build/bin/ArtifactGpuTest"
for l in $(ldd "$build/bin/ArtifactGpuTest" | awk '/libabsl|libprotobuf|libonnx|libfusert/ {print $3}'); do
  cp -L "$l" "$dev/lib/"
done
for m in "$models"/*/; do
  n=$(basename "$m")
  [ -f "$m/model.onnx" ] || continue
  mkdir -p "$dev/models/$n"
  cp -r "$m/test_data_set_0" "$dev/models/$n/"
  touch "$dev/models/$n/model.onnx"  # listed, not read, in prebuilt mode
done
cat > "$dev/run.sh" <<'RUN'
#!/bin/sh
cd "$(dirname "$0")"
extra=$(for n in libcudnn.so.9 libcublasLt.so.13 libcudart.so.13; do find /usr /opt -name "$n" 2>/dev/null | head -1; done | xargs -n1 dirname 2>/dev/null | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="$PWD/lib:$extra$LD_LIBRARY_PATH"
FUSEC_ARTIFACT_PREBUILT=$PWD/artifacts FUSEC_SHARED_MODELS=$PWD/models ./ArtifactGpuTest
RUN
chmod +x "$dev/run.sh"
du -sh "$dev"
