//===- OnnxModelBuilder.h - Small ONNX models built in tests ----*- C++ -*-===//
//
// Helpers shared by the importer tests: a temporary folder, ModelProto
// builders (inputs, outputs, nodes, attributes, initializers, external data)
// and file writers. Header-only, test code.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_TEST_UNIT_FRONTEND_ONNXMODELBUILDER_H
#define FUSEC_TEST_UNIT_FRONTEND_ONNXMODELBUILDER_H

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ir/Graph.h"
#include "onnx/onnx_pb.h"

namespace fusec::frontend::onnx_builder {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "fusec-onnx-XXXXXX").string();
    char *p = mkdtemp(tmpl.data());
    path_ = p ? fs::path(p) : fs::temp_directory_path();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path &path() const { return path_; }
  std::string file(const std::string &name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

/// A dim for valueInfo(): an int is dim_value, a string dim_param, "" unknown.
struct D {
  D(int64_t v) : value(v) {}  // NOLINT
  D(const char *p) : param(p) {}  // NOLINT
  int64_t value = 0;
  std::string param;
  bool isParam() const { return !param.empty() || paramEmpty; }
  bool paramEmpty = false;
};

inline onnx::ModelProto makeModel(int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("fusec-test");
  auto *os = m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  m.mutable_graph()->set_name("test_graph");
  return m;
}

inline void setValueInfo(onnx::ValueInfoProto *vi, const std::string &name, int32_t elemType,
                  const std::vector<D> &dims) {
  vi->set_name(name);
  auto *tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elemType);
  auto *shape = tt->mutable_shape();
  for (const D &d : dims) {
    auto *dim = shape->add_dim();
    if (!d.param.empty()) {
      if (d.param != "?") dim->set_dim_param(d.param);
    } else {
      dim->set_dim_value(d.value);
    }
  }
}

inline void addInput(onnx::ModelProto &m, const std::string &name, const std::vector<D> &dims,
              int32_t elemType = onnx::TensorProto::FLOAT) {
  setValueInfo(m.mutable_graph()->add_input(), name, elemType, dims);
}
inline void addOutput(onnx::ModelProto &m, const std::string &name, const std::vector<D> &dims,
               int32_t elemType = onnx::TensorProto::FLOAT) {
  setValueInfo(m.mutable_graph()->add_output(), name, elemType, dims);
}

inline onnx::NodeProto *addNode(onnx::ModelProto &m, const std::string &op,
                         const std::vector<std::string> &ins,
                         const std::vector<std::string> &outs, const std::string &name = "",
                         const std::string &domain = "") {
  auto *n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  n->set_domain(domain);
  for (const auto &i : ins) n->add_input(i);
  for (const auto &o : outs) n->add_output(o);
  return n;
}

inline void addIntsAttr(onnx::NodeProto *n, const std::string &name, const std::vector<int64_t> &v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void addIntAttr(onnx::NodeProto *n, const std::string &name, int64_t v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

inline onnx::TensorProto *addFloatInit(onnx::ModelProto &m, const std::string &name,
                                const std::vector<int64_t> &dims,
                                const std::vector<float> &values) {
  auto *t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
  return t;
}

inline std::string writeModel(const onnx::ModelProto &m, const std::string &path) {
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path;
}

inline void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline ir::Node *findNode(const ir::Graph &g, const std::string &name) {
  for (ir::Node *n : g.nodes())
    if (n->name() == name) return n;
  return nullptr;
}

inline std::vector<float> iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.25f - 1.0f;
  return v;
}

/// A model whose initializer "w" (f32[2,3]) lives in external file \p location.
inline onnx::ModelProto externalModel(const std::string &location, int64_t offset = -1,
                               int64_t length = -1) {
  auto m = makeModel(17);
  addInput(m, "x", {2, 3});
  auto *t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->add_dims(3);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto *kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  if (offset >= 0) {
    kv = t->add_external_data();
    kv->set_key("offset");
    kv->set_value(std::to_string(offset));
  }
  if (length >= 0) {
    kv = t->add_external_data();
    kv->set_key("length");
    kv->set_value(std::to_string(length));
  }
  addNode(m, "Add", {"x", "w"}, {"y"}, "add");
  addOutput(m, "y", {2, 3});
  return m;
}

inline std::string floatBytes(const std::vector<float> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float));
}

}  // namespace fusec::frontend::onnx_builder

#endif  // FUSEC_TEST_UNIT_FRONTEND_ONNXMODELBUILDER_H
