//===- fusert.hpp - RAII C++ wrapper over the libfusert C API -===//
//
// Header-only; every call forwards to fusert.h. Nothing here throws: failures
// come back as a fusert::Status holding the code and fusert_last_error().
//
//   fusert::Model model;
//   fusert::Status s = model.load("out/gpt2");
//   if (!s.ok()) { std::cerr << s.message() << "\n"; return 1; }
//   s = model.run(inputs, outputs, stream);
//
//===----------------------------------------------------------------------===//
#ifndef FUSERT_FUSERT_HPP
#define FUSERT_FUSERT_HPP

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fusert/fusert.h"

namespace fusert {

/// A status code and, on failure, its message.
class Status {
public:
  Status() = default;
  Status(fusert_status code, std::string message)
      : code_(code), message_(std::move(message)) {}
  /// \returns OK for FUSERT_OK, else \p code with fusert_last_error().
  static Status fromCode(fusert_status code) {
    return code == FUSERT_OK ? Status()
                             : Status(code, fusert_last_error());
  }

  bool ok() const { return code_ == FUSERT_OK; }
  fusert_status code() const { return code_; }
  const std::string &message() const { return message_; }
  /// "FUSERT_NOT_FOUND: <message>", or "FUSERT_OK".
  std::string toString() const {
    return ok() ? fusert_status_name(code_)
                : std::string(fusert_status_name(code_)) + ": " + message_;
  }

private:
  fusert_status code_ = FUSERT_OK;
  std::string message_;
};

/// Name, dtype and static shape of a model input or output.
struct TensorInfo {
  std::string name;
  fusert_dtype dtype = FUSERT_F32;
  std::vector<int64_t> shape;

  /// \returns the number of elements (1 for a scalar).
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  /// \returns the size in bytes of the dense tensor.
  size_t bytes() const {
    return static_cast<size_t>(numElements()) * fusert_dtype_size(dtype);
  }
  /// \returns a fusert_tensor for \p data; valid while this TensorInfo lives.
  fusert_tensor bind(void *data) const {
    return fusert_tensor{name.c_str(), dtype, static_cast<int>(shape.size()),
                         shape.data(), data};
  }
};

/// A loaded artifact; unloads on destruction. Movable, not copyable.
class Model {
public:
  Model() = default;
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  Model(Model &&other) noexcept : model_(std::exchange(other.model_, nullptr)) {}
  Model &operator=(Model &&other) noexcept {
    if (this != &other) {
      fusert_unload(model_);
      model_ = std::exchange(other.model_, nullptr);
    }
    return *this;
  }
  ~Model() { fusert_unload(model_); }

  /// Loads the artifact in \p dir, replacing any model held. See fusert_load.
  Status load(const std::string &dir) {
    fusert_unload(model_);
    model_ = nullptr;
    return Status::fromCode(fusert_load(dir.c_str(), &model_));
  }

  bool loaded() const { return model_ != nullptr; }
  fusert_model *get() const { return model_; }

  std::vector<TensorInfo> inputs() const { return infos(true); }
  std::vector<TensorInfo> outputs() const { return infos(false); }

  /// Enqueues a run on \p stream. See fusert_run.
  Status run(const std::vector<fusert_tensor> &inputs,
             std::vector<fusert_tensor> &outputs, cudaStream_t stream = nullptr) {
    return Status::fromCode(fusert_run(model_, inputs.data(), inputs.size(),
                                       outputs.data(), outputs.size(), stream));
  }

  /// See fusert_enable_cuda_graph.
  Status enableCudaGraph(bool on) {
    return Status::fromCode(fusert_enable_cuda_graph(model_, on ? 1 : 0));
  }

  /// See fusert_fill_arena.
  Status fillArena(int byteValue, cudaStream_t stream = nullptr) {
    return Status::fromCode(fusert_fill_arena(model_, byteValue, stream));
  }

  /// See fusert_enable_profiling.
  Status enableProfiling(bool on) {
    return Status::fromCode(fusert_enable_profiling(model_, on ? 1 : 0));
  }

  /// \returns the JSON profile report (see fusert_profile_report), "" on error.
  std::string profileReport() const {
    size_t needed = 0;
    if (fusert_profile_report(model_, nullptr, 0, &needed) != FUSERT_OK)
      return "";
    std::string text(needed, '\0');
    if (fusert_profile_report(model_, &text[0], text.size(), nullptr) != FUSERT_OK)
      return "";
    text.resize(needed - 1);
    return text;
  }

private:
  std::vector<TensorInfo> infos(bool input) const {
    std::vector<TensorInfo> result;
    size_t n = input ? fusert_num_inputs(model_) : fusert_num_outputs(model_);
    for (size_t i = 0; i < n; ++i) {
      const char *name = nullptr;
      fusert_dtype dtype = FUSERT_F32;
      int rank = 0;
      const int64_t *shape = nullptr;
      fusert_status s =
          input ? fusert_input_info(model_, i, &name, &dtype, &rank, &shape)
                : fusert_output_info(model_, i, &name, &dtype, &rank, &shape);
      if (s != FUSERT_OK)
        break;
      result.push_back(
          TensorInfo{name, dtype, std::vector<int64_t>(shape, shape + rank)});
    }
    return result;
  }

  fusert_model *model_ = nullptr;
};

} // namespace fusert

#endif // FUSERT_FUSERT_HPP
