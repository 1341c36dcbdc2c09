# Sourced by bootstrap.sh and test.sh: installs what fusec needs, from Debian
# packages and (for Python test tooling only) pip. Downloads nothing else.
DEBIAN_PACKAGES=(cmake ninja-build g++ python3 python3-pip libonnx-dev libonnx-testdata
  libprotobuf-dev protobuf-compiler libabsl-dev llvm-14-dev llvm-14-tools liblld-14-dev
  googletest libgtest-dev graphviz nlohmann-json3-dev clang libclang-rt-14-dev)
DEBIAN_PACKAGES+=(libopenblas-dev) # libfusert: the cpu executor's cblas_sgemm
PIP_PACKAGES=(onnx==1.23.2 onnxruntime numpy lit)

install_deps() {
  local missing=()
  for p in "${DEBIAN_PACKAGES[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if ((${#missing[@]})); then
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
  fi
  if ! python3 -c "import onnx, onnxruntime, numpy, lit" >/dev/null 2>&1; then
    python3 -m pip install -q "${PIP_PACKAGES[@]}" ||
      python3 -m pip install -q --break-system-packages "${PIP_PACKAGES[@]}"
  fi
}
