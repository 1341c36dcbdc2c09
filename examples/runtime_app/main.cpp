//===- main.cpp - Run a fusec artifact with libfusert and time it -===//
//
// Usage: runtime_app ARTIFACT_DIR [--runs N] [--no-graph] [INPUT.bin ...]
//
// Loads the artifact, fills input i from the i-th INPUT.bin (raw, dense,
// row-major bytes of the input's dtype and shape) or, if none is given, with
// deterministic values; runs it once with CUDA graphs on, prints each
// output's first values and checksums, then times N more runs and prints the
// median. Exit status 0 on success, 1 on any error (with its message).
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "fusert/fusert.hpp"

namespace {

/// Prints \p what and the CUDA error, \returns false, if \p err is an error.
bool cudaOk(cudaError_t err, const char *what) {
  if (err == cudaSuccess)
    return true;
  std::cerr << "runtime_app: " << what << ": " << cudaGetErrorString(err) << "\n";
  return false;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xffu) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp <= 0)
    return static_cast<uint16_t>(sign); // tiny: flush to zero
  if (exp >= 31)
    return static_cast<uint16_t>(sign | 0x7c00u); // overflow: infinity
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  if (mant & 0x1000u) // round half up
    ++h;
  return static_cast<uint16_t>(h);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu,
           mant = h & 0x3ffu, x;
  if (exp == 0)
    return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mant), -24);
  if (exp == 31)
    x = sign | 0x7f800000u | (mant << 13);
  else
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float bf16ToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// Deterministic contents for input \p input: small values, and small
/// non-negative integers so that integer inputs work as indices.
std::vector<char> fillInput(const fusert::TensorInfo &info, size_t input) {
  std::vector<char> bytes(info.bytes());
  int64_t n = info.numElements();
  for (int64_t j = 0; j < n; ++j) {
    int64_t r = (static_cast<int64_t>(input) * 7 + j) % 13;
    float f = static_cast<float>(r - 6) * 0.1f;
    char *p = bytes.data() + j * fusert_dtype_size(info.dtype);
    switch (info.dtype) {
    case FUSERT_F32:
      std::memcpy(p, &f, 4);
      break;
    case FUSERT_F64: {
      double d = f;
      std::memcpy(p, &d, 8);
      break;
    }
    case FUSERT_F16: {
      uint16_t h = floatToHalf(f);
      std::memcpy(p, &h, 2);
      break;
    }
    case FUSERT_BF16: {
      uint16_t h = floatToBf16(f);
      std::memcpy(p, &h, 2);
      break;
    }
    case FUSERT_I64: {
      int64_t v = j % 7;
      std::memcpy(p, &v, 8);
      break;
    }
    case FUSERT_I32: {
      int32_t v = static_cast<int32_t>(j % 7);
      std::memcpy(p, &v, 4);
      break;
    }
    case FUSERT_I8:
    case FUSERT_U8:
      *p = static_cast<char>(j % 7);
      break;
    case FUSERT_I16:
    case FUSERT_U16: {
      uint16_t v = static_cast<uint16_t>(j % 7);
      std::memcpy(p, &v, 2);
      break;
    }
    case FUSERT_U32: {
      uint32_t v = static_cast<uint32_t>(j % 7);
      std::memcpy(p, &v, 4);
      break;
    }
    case FUSERT_U64: {
      uint64_t v = static_cast<uint64_t>(j % 7);
      std::memcpy(p, &v, 8);
      break;
    }
    case FUSERT_BOOL:
      *p = static_cast<char>(j % 2);
      break;
    }
  }
  return bytes;
}

double elementAt(const std::vector<char> &bytes, fusert_dtype dtype,
                 int64_t j) {
  const char *p = bytes.data() + j * fusert_dtype_size(dtype);
  switch (dtype) {
  case FUSERT_F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case FUSERT_F64: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  case FUSERT_F16:
  case FUSERT_BF16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return dtype == FUSERT_F16 ? halfToFloat(h) : bf16ToFloat(h);
  }
  case FUSERT_I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  case FUSERT_I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case FUSERT_I8:
    return static_cast<signed char>(*p);
  case FUSERT_U8:
  case FUSERT_BOOL:
    return static_cast<unsigned char>(*p);
  case FUSERT_I16: {
    int16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case FUSERT_U16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  case FUSERT_U32: {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case FUSERT_U64: {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  }
  return 0;
}

bool readFile(const std::string &path, size_t want, std::vector<char> &out) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    std::cerr << "runtime_app: cannot read " << path << "\n";
    return false;
  }
  size_t size = static_cast<size_t>(in.tellg());
  if (size != want) {
    std::cerr << "runtime_app: " << path << " has " << size
              << " bytes, the input needs " << want << "\n";
    return false;
  }
  out.resize(size);
  in.seekg(0);
  in.read(out.data(), static_cast<std::streamsize>(size));
  return static_cast<bool>(in);
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: runtime_app ARTIFACT_DIR [--runs N] [--no-graph] "
                 "[INPUT.bin ...]\n";
    return 1;
  }
  std::string dir = argv[1];
  int runs = 20;
  bool graph = true;
  std::vector<std::string> inputFiles;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--no-graph")
      graph = false;
    else
      inputFiles.push_back(arg);
  }

  fusert::Model model;
  fusert::Status status = model.load(dir);
  if (!status.ok()) {
    std::cerr << "runtime_app: " << status.toString() << "\n";
    return 1;
  }
  std::vector<fusert::TensorInfo> inputs = model.inputs(),
                                  outputs = model.outputs();
  if (inputFiles.size() > inputs.size()) {
    std::cerr << "runtime_app: " << inputFiles.size()
              << " input files for a model with " << inputs.size()
              << " inputs\n";
    return 1;
  }

  // Device buffers: one per input and output, freed at exit.
  std::vector<void *> deviceBuffers;
  struct Free {
    std::vector<void *> &ptrs;
    ~Free() {
      for (void *p : ptrs)
        cudaFree(p);
    }
  } freeAtExit{deviceBuffers};
  auto allocate = [&](size_t bytes) -> void * {
    void *p = nullptr;
    if (!cudaOk(cudaMalloc(&p, std::max<size_t>(bytes, 1)), "cudaMalloc"))
      return nullptr;
    deviceBuffers.push_back(p);
    return p;
  };

  std::vector<fusert_tensor> in, out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<char> host;
    if (i < inputFiles.size()) {
      if (!readFile(inputFiles[i], inputs[i].bytes(), host))
        return 1;
    } else {
      host = fillInput(inputs[i], i);
    }
    void *p = allocate(host.size());
    if (!p || !cudaOk(cudaMemcpy(p, host.data(), host.size(),
                                 cudaMemcpyHostToDevice),
                      "uploading an input"))
      return 1;
    in.push_back(inputs[i].bind(p));
    std::cout << "input  " << inputs[i].name << " "
              << fusert_dtype_name(inputs[i].dtype) << shapeStr(inputs[i].shape)
              << (i < inputFiles.size() ? " from " + inputFiles[i]
                                        : std::string(" (generated)"))
              << "\n";
  }
  for (const fusert::TensorInfo &info : outputs) {
    void *p = allocate(info.bytes());
    if (!p)
      return 1;
    out.push_back(info.bind(p));
  }

  cudaStream_t stream;
  if (!cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
              "cudaStreamCreate"))
    return 1;
  model.enableCudaGraph(graph);
  status = model.run(in, out, stream);
  if (!status.ok() ||
      !cudaOk(cudaStreamSynchronize(stream), "running the model")) {
    std::cerr << "runtime_app: " << status.toString() << "\n";
    return 1;
  }

  for (size_t i = 0; i < outputs.size(); ++i) {
    const fusert::TensorInfo &info = outputs[i];
    std::vector<char> host(info.bytes());
    if (!cudaOk(cudaMemcpy(host.data(), out[i].data, host.size(),
                           cudaMemcpyDeviceToHost),
                "downloading an output"))
      return 1;
    int64_t n = info.numElements();
    double sum = 0, sumAbs = 0;
    for (int64_t j = 0; j < n; ++j) {
      double v = elementAt(host, info.dtype, j);
      sum += v;
      sumAbs += std::fabs(v);
    }
    std::printf("output %s %s%s first:", info.name.c_str(),
                fusert_dtype_name(info.dtype), shapeStr(info.shape).c_str());
    for (int64_t j = 0; j < std::min<int64_t>(n, 8); ++j)
      std::printf(" %.6g", elementAt(host, info.dtype, j));
    std::printf("\n       checksum sum=%.9g sum_abs=%.9g\n", sum, sumAbs);
  }

  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    status = model.run(in, out, stream);
    if (!status.ok() || !cudaOk(cudaStreamSynchronize(stream), "timed run")) {
      std::cerr << "runtime_app: " << status.toString() << "\n";
      return 1;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%d runs (cuda graph %s): median %.4f ms, min %.4f ms\n", runs,
              graph ? "on" : "off", ms[ms.size() / 2], ms.front());
  cudaStreamDestroy(stream);
  return 0;
}
