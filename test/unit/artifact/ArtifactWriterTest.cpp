//===- ArtifactWriterTest.cpp - The artifact folder, end to end on the CPU -===//
//
// Writes artifacts (docs/ARTIFACT.md) for small graphs and for every shared
// model (../shared/models, or $FUSEC_SHARED_MODELS; shapes bound from
// test_data_set_0, pipeline passes::defaultPipeline("cuda")) into temporary
// folders and checks:
//   - the manifest: every referenced buffer id exists, storage fields and
//     offsets are in range and aligned, arena buffers that are live at the
//     same step do not overlap, weights.bin has the announced size, and (when
//     libfusert is built) the runtime's own parser accepts it;
//   - nvcc builds libmodel.so (the check that generated code compiles for
//     every shared model) and it exports every kernel symbol;
//   - atomic replacement: a failing nvcc (a fake one) leaves the previous
//     OUT intact and surfaces nvcc's output; no temporary folders remain;
//   - the OUT rules (file, symlink, non-artifact folder, model inside,
//     current directory) and the no-nvcc mode (sources + the command).
// Tests that need nvcc skip when it is not found.
//
//===----------------------------------------------------------------------===//
#include "codegen/artifact/ArtifactWriter.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/cuda/Nvcc.h"
#include "frontend/onnx/OnnxImporter.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "passes/Pass.h"
#include "passes/Pipeline.h"
#include "test/unit/TestModels.h"

#ifdef FUSEC_TEST_HAVE_RUNTIME_CORE
#include "runtime/internal/Manifest.h"
#endif

namespace fusec::artifact {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string readFile(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A fresh temporary folder, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "fusec-artifact-test-XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    path_ = ::mkdtemp(buf.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path &path() const { return path_; }

 private:
  fs::path path_;
};

/// Names in \p dir (for leftover temporary folders).
std::vector<std::string> listDir(const fs::path &dir) {
  std::vector<std::string> names;
  for (const auto &e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

int64_t dtypeBytes(const std::string &d) {
  static const std::map<std::string, int64_t> k = {{"f32", 4}, {"f16", 2}, {"bf16", 2},
                                                   {"f64", 8}, {"i64", 8}, {"i32", 4},
                                                   {"i8", 1},  {"u8", 1},  {"bool", 1}};
  auto it = k.find(d);
  return it == k.end() ? -1 : it->second;
}

/// Checks manifest.json of \p dir against ARTIFACT.md; \p expectLibrary:
/// libmodel.so must exist and export every kernel symbol.
void validateArtifact(const fs::path &dir, bool expectLibrary) {
  for (const char *f : {"manifest.json", "model.cu", "weights.bin", "fusion.json"})
    ASSERT_TRUE(fs::exists(dir / f)) << f;
  const std::string text = readFile(dir / "manifest.json");
  Json m = Json::parse(text, nullptr, false);
  ASSERT_TRUE(m.is_object()) << "manifest.json is not JSON";
  EXPECT_EQ(m["format"], "fusec-artifact");
  EXPECT_EQ(m["version"], 1);
  EXPECT_EQ(m["target"], "cuda");
  EXPECT_TRUE(m["arch"].is_string());
  EXPECT_TRUE(m["model"].is_string());
  EXPECT_TRUE(Json::parse(readFile(dir / "fusion.json"), nullptr, false).is_object());

  const int64_t weightsBytes = m.contains("weights") ? m["weights"]["bytes"].get<int64_t>() : 0;
  if (m.contains("weights")) {
    EXPECT_EQ(m["weights"]["file"], "weights.bin");
  }
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(dir / "weights.bin")), weightsBytes);
  const int64_t arenaBytes = m["arena_bytes"].get<int64_t>();
  EXPECT_EQ(arenaBytes % 256, 0);

  std::map<int, Json> buffers;
  const Json &bl = m["buffers"];
  ASSERT_TRUE(bl.is_array());
  for (const Json &b : bl) {
    int id = b["id"].get<int>();
    EXPECT_TRUE(buffers.emplace(id, b).second) << "duplicate id " << id;
    int64_t n = 1;
    for (const Json &d : b["shape"]) n *= d.get<int64_t>();
    ASSERT_GT(dtypeBytes(b["dtype"]), 0) << b.dump();
    EXPECT_EQ(b["bytes"].get<int64_t>(), n * dtypeBytes(b["dtype"])) << b.dump();
  }
  auto exists = [&](const Json &id) {
    return id.is_number_integer() && buffers.count(id.get<int>()) != 0;
  };
  for (const auto &[id, b] : buffers) {
    const std::string st = b["storage"];
    const int64_t bytes = b["bytes"];
    if (st == "input" || st == "output") {
      const Json &list = m[st == "input" ? "inputs" : "outputs"];
      int index = b["index"];
      ASSERT_LT(index, static_cast<int>(list.size())) << b.dump();
      EXPECT_EQ(list[index]["buffer"], id);
      EXPECT_EQ(list[index]["name"], b["name"]);
      EXPECT_EQ(list[index]["shape"], b["shape"]);
      EXPECT_EQ(list[index]["dtype"], b["dtype"]);
    } else if (st == "weight") {
      int64_t off = b["offset"];
      EXPECT_EQ(off % 256, 0);
      EXPECT_LE(off + bytes, weightsBytes) << b.dump();
    } else if (st == "arena") {
      int64_t off = b["offset"];
      EXPECT_EQ(off % 256, 0);
      EXPECT_LE(off + bytes, arenaBytes) << b.dump();
    } else if (st == "alias") {
      ASSERT_TRUE(exists(b["of"])) << b.dump();
      const Json &root = buffers[b["of"].get<int>()];
      EXPECT_NE(root["storage"], "alias") << "alias chains resolve to the root";
      EXPECT_LE(b["offset"].get<int64_t>() + bytes, root["bytes"].get<int64_t>()) << b.dump();
    } else {
      ADD_FAILURE() << "bad storage " << b.dump();
    }
  }
  for (const char *list : {"inputs", "outputs"})
    for (const Json &t : m[list]) {
      ASSERT_TRUE(exists(t["buffer"])) << t.dump();
      EXPECT_EQ(buffers[t["buffer"].get<int>()]["storage"], list == std::string("inputs") ? "input" : "output");
    }

  // Steps: ids exist; collect live ranges of arena roots.
  auto rootOf = [&](int id) {
    while (buffers[id]["storage"] == "alias") id = buffers[id]["of"];
    return id;
  };
  std::map<int, std::pair<int, int>> live;
  std::set<std::string> symbols;
  int stepIndex = 0;
  for (const Json &s : m["steps"]) {
    std::vector<Json> ids;
    const std::string kind = s["kind"];
    if (kind == "kernel") {
      EXPECT_FALSE(s["symbol"].get<std::string>().empty());
      symbols.insert(s["symbol"]);
      for (const Json &id : s["buffers"]) ids.push_back(id);
    } else if (kind == "gemm") {
      for (const char *f : {"a", "b", "d", "c", "bias"})
        if (s.contains(f)) ids.push_back(s[f]);
      for (const char *f : {"m", "n", "k", "batch", "stride_a", "stride_b", "stride_c", "stride_d",
                            "trans_a", "trans_b", "alpha", "beta", "epilogue", "dtype", "compute"})
        EXPECT_TRUE(s.contains(f)) << f;
    } else if (kind == "conv") {
      for (const char *f : {"x", "w", "y", "bias"})
        if (s.contains(f)) ids.push_back(s[f]);
    } else if (kind == "copy") {
      ids.push_back(s["src"]);
      ids.push_back(s["dst"]);
      EXPECT_EQ(s["bytes"], buffers[s["dst"].get<int>()]["bytes"]);
    } else {
      ADD_FAILURE() << "bad step kind " << s.dump();
    }
    for (const Json &id : ids) {
      ASSERT_TRUE(exists(id)) << "step " << s.dump() << " names a missing buffer";
      int r = rootOf(id.get<int>());
      if (buffers[r]["storage"] != "arena") continue;
      auto [it, fresh] = live.emplace(r, std::make_pair(stepIndex, stepIndex));
      if (!fresh) it->second.second = stepIndex;
    }
    ++stepIndex;
  }
  for (auto a = live.begin(); a != live.end(); ++a)
    for (auto b = std::next(a); b != live.end(); ++b) {
      bool timeOverlap = !(a->second.second < b->second.first || b->second.second < a->second.first);
      int64_t ao = buffers[a->first]["offset"], ab = buffers[a->first]["bytes"];
      int64_t bo = buffers[b->first]["offset"], bb = buffers[b->first]["bytes"];
      if (timeOverlap && ab > 0 && bb > 0) {
        EXPECT_FALSE(ao < bo + bb && bo < ao + ab)
            << "arena buffers " << a->first << " and " << b->first << " overlap while both live";
      }
    }

#ifdef FUSEC_TEST_HAVE_RUNTIME_CORE
  rt::Manifest parsed;
  rt::Status st = rt::parseManifest(text, parsed);
  EXPECT_TRUE(st.ok()) << "runtime rejects the manifest: " << st.message();
#endif

  if (expectLibrary) {
    ASSERT_TRUE(m.contains("library"));
    fs::path lib = dir / m["library"].get<std::string>();
    ASSERT_TRUE(fs::exists(lib)) << lib;
    void *h = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::cerr << "note: cannot dlopen " << lib << " (" << ::dlerror()
                << "); symbol check skipped\n";
      return;
    }
    for (const std::string &sym : symbols) EXPECT_NE(::dlsym(h, sym.c_str()), nullptr) << sym;
    ::dlclose(h);
  }
}

/// Runs the default cuda pipeline on \p g with \p ctx.
absl::Status runPipeline(ir::Graph &g, passes::PassContext &ctx) {
  auto pipeline = passes::parsePipeline(passes::pipelineString(passes::defaultPipeline("cuda")));
  if (!pipeline.ok()) return pipeline.status();
  return passes::runPasses(g, ctx, *pipeline);
}

ir::TensorType f32(std::vector<int64_t> s) { return ir::TensorType::fromShape(ir::DType::kF32, s); }

/// y = softmax(relu(x * w + b)) with x f32[4,32], w [32,16]: one gemm-ish
/// group and one reduction, a weight, an elementwise op.
std::unique_ptr<ir::Graph> smallGraph() {
  auto g = std::make_unique<ir::Graph>();
  g->setName("small");
  ir::Value *x = g->addInput("x", f32({4, 32}));
  std::vector<double> wv(32 * 16), bv(16);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = 0.01 * static_cast<double>(i % 17);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = 0.5 - 0.1 * static_cast<double>(i);
  ir::Value *w = g->addConstant("w", ir::Tensor::fromDoubles(ir::DType::kF32, {32, 16}, wv));
  ir::Value *b = g->addConstant("b", ir::Tensor::fromDoubles(ir::DType::kF32, {16}, bv));
  ir::Node *mm = g->addNode("MatMul", {x, w}, {"mm"}, {}, "mm");
  mm->output(0)->setType(f32({4, 16}));
  ir::Node *add = g->addNode("Add", {mm->output(0), b}, {"add"}, {}, "add");
  add->output(0)->setType(f32({4, 16}));
  ir::Node *relu = g->addNode("Relu", {add->output(0)}, {"relu"}, {}, "relu");
  relu->output(0)->setType(f32({4, 16}));
  ir::Node *sm = g->addNode("Softmax", {relu->output(0)}, {"y"}, {}, "softmax");
  sm->output(0)->setType(f32({4, 16}));
  g->markOutput(sm->output(0));
  return g;
}

/// A compiled small graph plus its plan, ready for writeArtifact.
struct Compiled {
  std::unique_ptr<ir::Graph> graph;
  passes::PassContext ctx;
};

std::unique_ptr<Compiled> compileSmall() {
  auto c = std::make_unique<Compiled>();
  c->graph = smallGraph();
  absl::Status st = runPipeline(*c->graph, c->ctx);
  EXPECT_TRUE(st.ok()) << st;
  return c;
}

bool haveNvcc() { return !codegen::findNvcc("").empty(); }

/// Writes a shell script \p path that prints \p text to stderr and exits 1.
void writeFakeNvcc(const fs::path &path, const std::string &text) {
  std::ofstream(path) << "#!/bin/sh\necho '" << text << "' >&2\necho \"args: $*\" >&2\nexit 1\n";
  fs::permissions(path, fs::perms::owner_all);
}

TEST(ArtifactWriter, SmallGraphNoNvccWritesSourcesAndCommand) {
  auto c = compileSmall();
  TempDir tmp;
  ArtifactOptions opts;
  opts.runNvcc = false;
  ArtifactSummary sum;
  fs::path out = tmp.path() / "out";
  absl::Status st = writeArtifact(*c->graph, c->ctx.fusionPlan, c->ctx.target, opts, out.string(), &sum);
  ASSERT_TRUE(st.ok()) << st;
  validateArtifact(out, /*expectLibrary=*/false);
  EXPECT_FALSE(fs::exists(out / "libmodel.so"));
  ASSERT_EQ(sum.warnings.size(), 1u);
  EXPECT_NE(sum.warnings[0].find("-O3 -std=c++17 -arch=sm_90 -shared -Xcompiler -fPIC"),
            std::string::npos)
      << sum.warnings[0];
  EXPECT_NE(sum.warnings[0].find("-o libmodel.so model.cu"), std::string::npos) << sum.warnings[0];
  EXPECT_NE(sum.warnings[0].find(out.string()), std::string::npos) << sum.warnings[0];
  EXPECT_FALSE(sum.builtLibrary);
  EXPECT_EQ(listDir(tmp.path()), std::vector<std::string>{"out"});
  Json m = Json::parse(readFile(out / "manifest.json"));
  EXPECT_EQ(m["model"], "small");
  EXPECT_EQ(m["inputs"][0]["name"], "x");
  EXPECT_EQ(m["outputs"][0]["name"], "y");
  EXPECT_EQ(m["outputs"][0]["shape"], Json::array({4, 16}));
  // weights.bin holds the constants' bytes.
  std::string weights = readFile(out / "weights.bin");
  bool foundW = false;
  for (const Json &b : m["buffers"])
    if (b["storage"] == "weight" && b["name"] == "w") {
      foundW = true;
      float v;
      std::memcpy(&v, weights.data() + b["offset"].get<int64_t>() + 4 * 5, 4);
      EXPECT_FLOAT_EQ(v, 0.05f);
    }
  EXPECT_TRUE(foundW) << m["buffers"].dump();
  const std::string source = readFile(out / "model.cu");
  EXPECT_NE(source.find("extern \"C\""), std::string::npos);
  std::cout << "small graph: " << sum.memorySummary << "\n";
}

/// A bf16 LM head [64,32] x [32,33] whose Cast to f32 the cuda target folds
/// into the gemm: the manifest's gemm step records "d_dtype": "f32", its D
/// is the f32 graph output, no kernel casts, and the runtime's parser reads
/// the step back with an f32 D.
TEST(ArtifactWriter, FoldedOutputCastRecordsDDtype) {
  auto c = std::make_unique<Compiled>();
  c->graph = std::make_unique<ir::Graph>();
  ir::Graph &g = *c->graph;
  g.setName("head");
  ir::Value *x = g.addInput("x", ir::TensorType::fromShape(ir::DType::kBF16, {64, 32}));
  std::vector<double> wv(32 * 33);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = 0.125 * static_cast<double>(i % 9) - 0.5;
  ir::Value *w = g.addConstant("w", ir::Tensor::fromDoubles(ir::DType::kBF16, {32, 33}, wv));
  ir::Node *mm = g.addNode("MatMul", {x, w}, {"m"}, {}, "mm");
  mm->output(0)->setType(ir::TensorType::fromShape(ir::DType::kBF16, {64, 33}));
  ir::Node *cast = g.addNode("Cast", {mm->output(0)}, {"y"}, {{"to", ir::Attribute(int64_t{1})}}, "cast");
  cast->output(0)->setType(f32({64, 33}));
  g.markOutput(cast->output(0));
  ASSERT_TRUE(runPipeline(g, c->ctx).ok());
  TempDir tmp;
  ArtifactOptions opts;
  opts.runNvcc = false;
  fs::path out = tmp.path() / "out";
  absl::Status st = writeArtifact(g, c->ctx.fusionPlan, c->ctx.target, opts, out.string());
  ASSERT_TRUE(st.ok()) << st;
  validateArtifact(out, /*expectLibrary=*/false);
  Json m = Json::parse(readFile(out / "manifest.json"));
  int gemms = 0, kernels = 0;
  for (const Json &s : m["steps"]) {
    if (s["kind"] == "kernel") ++kernels;
    if (s["kind"] != "gemm") continue;
    ++gemms;
    EXPECT_EQ(s["dtype"], "bf16");
    EXPECT_EQ(s["d_dtype"], "f32");
    for (const Json &b : m["buffers"])
      if (b["id"] == s["d"]) {
        EXPECT_EQ(b["dtype"], "f32");
        EXPECT_EQ(b["name"], "y");
      }
  }
  EXPECT_EQ(gemms, 1);
  EXPECT_EQ(kernels, 0) << m["steps"].dump();
#ifdef FUSEC_TEST_HAVE_RUNTIME_CORE
  rt::Manifest parsed;
  ASSERT_TRUE(rt::parseManifest(readFile(out / "manifest.json"), parsed).ok());
  bool found = false;
  for (const rt::StepDesc &s : parsed.steps)
    if (s.kind == rt::StepKind::kGemm) {
      found = true;
      EXPECT_EQ(s.gemm.dtype, FUSERT_BF16);
      EXPECT_EQ(s.gemm.dDtype, FUSERT_F32);
    }
  EXPECT_TRUE(found);
#endif
}

TEST(ArtifactWriter, SmallGraphBuildsWithNvcc) {
  if (!haveNvcc()) GTEST_SKIP() << "nvcc not found";
  auto c = compileSmall();
  TempDir tmp;
  ArtifactOptions opts;
  ArtifactSummary sum;
  fs::path out = tmp.path() / "nested" / "out";  // missing parents are created
  absl::Status st = writeArtifact(*c->graph, c->ctx.fusionPlan, c->ctx.target, opts, out.string(), &sum);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_TRUE(sum.builtLibrary);
  EXPECT_TRUE(sum.warnings.empty());
  validateArtifact(out, /*expectLibrary=*/true);
}

TEST(ArtifactWriter, ReplacesAtomicallyAndKeepsOldOnNvccFailure) {
  auto c = compileSmall();
  TempDir tmp;
  fs::path out = tmp.path() / "out";
  ArtifactOptions opts;
  opts.runNvcc = false;
  ASSERT_TRUE(writeArtifact(*c->graph, c->ctx.fusionPlan, c->ctx.target, opts, out.string()).ok());
  // A marker proves which folder is in place: one of fusec's own files
  // rewritten (a file fusec did not write would make it refuse the folder;
  // ArtifactFolderTest).
  std::ofstream(out / "fusion.json") << "old";
  const std::string oldManifest = readFile(out / "manifest.json");

  fs::path fake = tmp.path() / "fake-nvcc";
  writeFakeNvcc(fake, "fake nvcc: error: something broke in model.cu(12)");
  opts.runNvcc = true;
  opts.nvccPath = fake.string();
  opts.modelName = "second";
  absl::Status st = writeArtifact(*c->graph, c->ctx.fusionPlan, c->ctx.target, opts, out.string());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), absl::StatusCode::kInternal);
  EXPECT_NE(st.message().find("fake nvcc: error: something broke in model.cu(12)"),
            std::string::npos)
      << st;
  EXPECT_NE(st.message().find("-arch=sm_90"), std::string::npos) << st;
  EXPECT_EQ(readFile(out / "fusion.json"), "old");
  EXPECT_EQ(readFile(out / "manifest.json"), oldManifest);
  EXPECT_EQ(listDir(tmp.path()), (std::vector<std::string>{"fake-nvcc", "out"}));

  // An nvcc path that does not exist: NotFound, old OUT intact.
  opts.nvccPath = (tmp.path() / "no-such-nvcc").string();
  st = writeArtifact(*c->graph, c->ctx.fusionPlan, c->ctx.target, opts, out.string());
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_EQ(readFile(out / "fusion.json"), "old");

  // A successful write replaces the folder (the marker goes away).
  opts.runNvcc = false;
  st = writeArtifact(*c->graph, c->ctx.fusionPlan, c->ctx.target, opts, out.string());
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_NE(readFile(out / "fusion.json"), "old");
  EXPECT_EQ(Json::parse(readFile(out / "manifest.json"))["model"], "second");
  EXPECT_EQ(listDir(tmp.path()), (std::vector<std::string>{"fake-nvcc", "out"}));
}

TEST(ArtifactWriter, OutFolderRules) {
  auto c = compileSmall();
  TempDir tmp;
  ArtifactOptions opts;
  opts.runNvcc = false;
  auto write = [&](const fs::path &p, const ArtifactOptions &o) {
    return writeArtifact(*c->graph, c->ctx.fusionPlan, c->ctx.target, o, p.string());
  };
  EXPECT_EQ(write("", opts).code(), absl::StatusCode::kInvalidArgument);

  fs::path file = tmp.path() / "a-file";
  std::ofstream(file) << "data";
  absl::Status st = write(file, opts);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("not a folder"), std::string::npos) << st;
  EXPECT_EQ(readFile(file), "data");

  // A model's folder (non-empty, not an artifact) is refused and untouched.
  fs::path modelDir = tmp.path() / "model";
  fs::create_directories(modelDir);
  std::ofstream(modelDir / "model.onnx") << "onnx";
  st = write(modelDir, opts);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("does not hold a fusec artifact"), std::string::npos) << st;
  EXPECT_TRUE(fs::exists(modelDir / "model.onnx"));

  // An artifact folder that contains the model is refused too.
  fs::path art = tmp.path() / "art";
  ASSERT_TRUE(write(art, opts).ok());
  std::ofstream(art / "model.onnx") << "onnx";
  ArtifactOptions withModel = opts;
  withModel.modelPath = (art / "model.onnx").string();
  st = write(art, withModel);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("contains the model"), std::string::npos) << st;
  EXPECT_TRUE(fs::exists(art / "model.onnx"));

  // A symlink is refused.
  fs::path link = tmp.path() / "link";
  fs::create_directory_symlink(art, link);
  EXPECT_EQ(write(link, opts).code(), absl::StatusCode::kInvalidArgument);

  // The current directory (or a parent of it) is refused.
  fs::path cwd = fs::current_path();
  fs::current_path(art);
  st = write(".", opts);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("current directory"), std::string::npos) << st;
  EXPECT_EQ(write("..", opts).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(write("/", opts).code(), absl::StatusCode::kInvalidArgument);
  fs::current_path(cwd);

  // An empty folder is fine; so is a trailing slash.
  fs::path empty = tmp.path() / "empty";
  fs::create_directories(empty);
  EXPECT_TRUE(write(empty.string() + "/", opts).ok());
  EXPECT_TRUE(fs::exists(empty / "manifest.json"));
  EXPECT_FALSE(fs::exists(tmp.path() / "empty.tmp-"));
  for (const std::string &n : listDir(tmp.path()))
    EXPECT_EQ(n.find(".tmp-"), std::string::npos) << n;
}

TEST(ArtifactWriter, OptionErrors) {
  auto c = compileSmall();
  TempDir tmp;
  ArtifactOptions opts;
  opts.runNvcc = false;
  fs::path out = tmp.path() / "out";
  auto write = [&](const ArtifactOptions &o) {
    return writeArtifact(*c->graph, c->ctx.fusionPlan, c->ctx.target, o, out.string());
  };
  ArtifactOptions p = opts;
  // fp16 / bf16 are accepted (the lower-precision pass retypes the graph).
  p.precision = "int3";
  EXPECT_EQ(write(p).code(), absl::StatusCode::kInvalidArgument);
  ArtifactOptions t = opts;
  t.target = "tpu";
  EXPECT_EQ(write(t).code(), absl::StatusCode::kInvalidArgument);
  ArtifactOptions a = opts;
  a.arch = "sm_90; rm -rf /";
  EXPECT_EQ(write(a).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(out));
  ArtifactOptions arch = opts;
  arch.arch = "sm_80";
  ASSERT_TRUE(write(arch).ok());
  EXPECT_EQ(Json::parse(readFile(out / "manifest.json"))["arch"], "sm_80");
}

TEST(ArtifactWriter, SymbolicShapesListInputsAndDims) {
  ir::Graph g;
  ir::Value *x = g.addInput(
      "input_ids", ir::TensorType(ir::DType::kI64, {ir::Dim::symbolic("batch"), ir::Dim::symbolic("seq")}));
  ir::Value *m = g.addInput("mask", ir::TensorType(ir::DType::kF32, {2, ir::Dim::symbolic("seq")}));
  ir::Node *n = g.addNode("Cast", {x}, {"y"}, {{"to", ir::Attribute(int64_t{1})}});
  n->output(0)->setType(ir::TensorType(ir::DType::kF32, {ir::Dim::symbolic("batch"), ir::Dim::symbolic("seq")}));
  (void)m;
  g.markOutput(n->output(0));
  TempDir tmp;
  ArtifactOptions opts;
  opts.runNvcc = false;
  absl::Status st = writeArtifact(g, passes::FusionPlan(), passes::TargetSpec(), opts,
                                  (tmp.path() / "out").string());
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("input 'input_ids' has shape i64[batch,seq]"), std::string::npos) << st;
  EXPECT_NE(st.message().find("--shape input_ids=<batch>x<seq>"), std::string::npos) << st;
  EXPECT_NE(st.message().find("mask=2x<seq>"), std::string::npos) << st;
  EXPECT_FALSE(fs::exists(tmp.path() / "out"));
}

/// A memory plan with one batched gemm (d = a * w, m = seq, batched over
/// batch) and one 1-D conv (z = conv(c, cw)) whose extents depend on the
/// symbols batch and seq; the probe values are those of batch = 2, seq = 3.
struct SymbolicLibrarySteps {
  ir::Graph g;
  MemoryPlan mem;

  SymbolicLibrarySteps() {
    const SymExtent batch = SymExtent::symbol("batch"), seq = SymExtent::symbol("seq");
    auto c = [](int64_t v) { return SymExtent::constant(v); };
    auto add = [&](const char *name, Storage storage, int indexOrOffset, std::vector<SymExtent> shape) {
      PlannedBuffer b;
      b.id = static_cast<int>(mem.buffers.size());
      b.value = g.addInput(name, f32({1}));
      b.name = name;
      b.storage = storage;
      b.symbolicShape = std::move(shape);
      for (const SymExtent &e : b.symbolicShape) b.shape.push_back(*e.evaluate({{"batch", 2}, {"seq", 3}}));
      int64_t n = 1;
      for (int64_t d : b.shape) n *= d;
      b.bytes = 4 * n;
      if (storage == Storage::kWeight)
        b.offset = indexOrOffset;
      else
        b.index = indexOrOffset;
      mem.idOf[b.value] = b.id;
      mem.buffers.push_back(b);
      return b.value;
    };
    const ir::Value *a = add("a", Storage::kInput, 0, {batch, seq, c(16)});
    const ir::Value *w = add("w", Storage::kWeight, 0, {c(16), c(32)});
    const ir::Value *d = add("d", Storage::kOutput, 0, {batch, seq, c(32)});
    const ir::Value *x = add("x", Storage::kInput, 1, {batch, c(4), seq});
    const ir::Value *cw = add("cw", Storage::kWeight, 2048, {c(4), c(4), c(1)});
    const ir::Value *y = add("y", Storage::kOutput, 1, {batch, c(4), seq});
    mem.inputs = {0, 3};
    mem.outputs = {2, 5};
    mem.weights = {1, 4};
    mem.weightsBytes = 2112;

    Step mm;
    mm.kind = Step::Kind::kGemm;
    mm.name = "mm";
    GemmParams &p = mm.gemm;
    p.a = a;
    p.b = w;
    p.d = d;
    p.m = 3, p.n = 32, p.k = 16, p.batch = 2;
    p.strideA = 48, p.strideB = 0, p.strideD = 96;
    p.symbolic = {{"m", seq}, {"batch", batch}, {"strideA", c(16) * seq}, {"strideD", c(32) * seq}};
    Step cv;
    cv.kind = Step::Kind::kConv;
    cv.name = "cv";
    ConvParams &q = cv.conv;
    q.x = x;
    q.w = cw;
    q.y = y;
    q.xShape = {2, 4, 3};
    q.wShape = {4, 4, 1};
    q.yShape = {2, 4, 3};
    q.pads = {0, 0};
    q.strides = {1};
    q.dilations = {1};
    q.symbolic = {{"xShape[0]", batch}, {"xShape[2]", seq}, {"yShape[0]", batch}, {"yShape[2]", seq}};
    mem.steps = {mm, cv};
  }
};

TEST(ArtifactWriter, ManifestWritesSymbolicGemmAndConvFields) {
  SymbolicLibrarySteps plan;
  absl::StatusOr<std::string> text = manifestJson(plan.mem, {}, "sym", "cuda", "sm_90", "");
  ASSERT_TRUE(text.ok()) << text.status();
  Json m = Json::parse(*text);
  const Json &mm = m["steps"][0];
  EXPECT_EQ(mm["m"], "seq");
  EXPECT_EQ(mm["n"], 32);
  EXPECT_EQ(mm["k"], 16);
  EXPECT_EQ(mm["batch"], "batch");
  EXPECT_EQ(mm["stride_a"], "16*seq");
  EXPECT_EQ(mm["stride_b"], 0);
  EXPECT_EQ(mm["stride_d"], "32*seq");
  const Json &cv = m["steps"][1];
  EXPECT_EQ(cv["x_shape"], Json::parse(R"(["batch", 4, "seq"])"));
  EXPECT_EQ(cv["y_shape"], Json::parse(R"(["batch", 4, "seq"])"));
  EXPECT_EQ(cv["w_shape"], Json::parse("[4, 4, 1]"));
#ifdef FUSEC_TEST_HAVE_RUNTIME_CORE
  // The runtime reads it back (with the "symbols" writeArtifact adds) and
  // evaluates it for any binding.
  m["symbols"] = Json::parse(R"([{"name": "batch", "min": 1, "max": 8},
                                 {"name": "seq", "min": 1, "max": 64}])");
  rt::Manifest parsed;
  rt::Status ps = rt::parseManifest(m.dump(), parsed);
  ASSERT_TRUE(ps.ok()) << ps.message();
  ps = rt::applyBinding(parsed, {5, 7});
  ASSERT_TRUE(ps.ok()) << ps.message();
  EXPECT_EQ(parsed.steps[0].gemm.m, 7);
  EXPECT_EQ(parsed.steps[0].gemm.batch, 5);
  EXPECT_EQ(parsed.steps[0].gemm.strideA, 112);
  EXPECT_EQ(parsed.steps[1].conv.xShape, (std::vector<int64_t>{5, 4, 7}));
#endif
}

TEST(ArtifactWriter, ManifestRefusesSymbolicConvFilterAndWindow) {
  auto write = [](const std::function<void(MemoryPlan &)> &edit) {
    SymbolicLibrarySteps plan;
    edit(plan.mem);
    return manifestJson(plan.mem, {}, "sym", "cuda", "sm_90", "").status();
  };
  absl::Status st = write([](MemoryPlan &mem) { mem.steps[1].conv.symbolic["wShape[0]"] = SymExtent::symbol("batch"); });
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("conv 'cv': w_shape[0] is batch, which depends on the binding"), std::string::npos)
      << st;
  st = write([](MemoryPlan &mem) { mem.steps[1].conv.symbolic["group"] = SymExtent::symbol("seq"); });
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("conv 'cv': group is seq"), std::string::npos) << st;
  // A gemm field with an offset is no product of symbols.
  st = write([](MemoryPlan &mem) { mem.steps[0].gemm.symbolic["k"] = SymExtent::symbol("seq").plus(-1); });
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("gemm 'mm': k is seq-1, not a product of symbols"), std::string::npos) << st;
}

TEST(Nvcc, CommandAndQuoting) {
  auto cmd = codegen::nvccCommand("nvcc", "sm_90", "model.cu", "libmodel.so");
  EXPECT_EQ(codegen::shellQuote(cmd),
            "nvcc -O3 -std=c++17 -arch=sm_90 -shared -Xcompiler -fPIC --cudart shared -o "
            "libmodel.so model.cu");
  EXPECT_EQ(codegen::shellQuote({"a b", "it's", ""}), "'a b' 'it'\\''s' ''");
  std::string out;
  EXPECT_TRUE(codegen::runCommand({"sh", "-c", "echo hi; echo err >&2"}, "", &out).ok());
  EXPECT_EQ(out, "hi\nerr\n");
  absl::Status st = codegen::runCommand({"sh", "-c", "exit 3"}, "", &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInternal);
  EXPECT_NE(st.message().find("status 3"), std::string::npos) << st;
  EXPECT_EQ(codegen::runCommand({"/no/such/binary"}, "", &out).code(), absl::StatusCode::kNotFound);
}

//===----------------------------------------------------------------------===//
// Shared models
//===----------------------------------------------------------------------===//

class SharedModelArtifact : public ::testing::TestWithParam<std::string> {
 protected:
  /// The default cuda pipeline and the artifact writer on the model, nvcc
  /// when \p nvcc; validates the folder.
  void writeAndCheck(bool nvcc);
};

// Host code only (the sanitizer pass runs it); Builds runs nvcc (ctest label
// nvcc).
TEST_P(SharedModelArtifact, Writes) { writeAndCheck(false); }

TEST_P(SharedModelArtifact, Builds) {
  if (!haveNvcc()) GTEST_SKIP() << "nvcc not found";
  writeAndCheck(true);
}

void SharedModelArtifact::writeAndCheck(bool nvcc) {
  if (GetParam() == "none") GTEST_SKIP() << "no shared models in " << testing::sharedModelsDir();
  auto model = testing::loadSharedModel(GetParam());
  ASSERT_TRUE(model.ok()) << model.status();
  auto &graph = model->graph;
  fs::path dir = model->dir;
  passes::PassContext ctx;
  absl::Status st = testing::runPipeline(
      *model, ctx, passes::pipelineString(passes::defaultPipeline("cuda")));
  ASSERT_TRUE(st.ok()) << st;
  TempDir tmp;
  ArtifactOptions opts;
  opts.modelName = GetParam();
  opts.modelPath = (dir / "model.onnx").string();
  opts.runNvcc = nvcc;
  ArtifactSummary sum;
  fs::path out = tmp.path() / GetParam();
  st = writeArtifact(*graph, ctx.fusionPlan, ctx.target, opts, out.string(), &sum);
  ASSERT_TRUE(st.ok()) << GetParam() << ": " << st;
  std::cout << GetParam() << ": " << sum.numSteps << " steps, " << sum.numKernels
            << " generated kernels; " << sum.memorySummary << "\n";
  validateArtifact(out, /*expectLibrary=*/opts.runNvcc);
}

INSTANTIATE_TEST_SUITE_P(Models, SharedModelArtifact, ::testing::ValuesIn(testing::sharedModelNames(true)),
                         [](const auto &info) {
                           std::string n = info.param;
                           for (char &ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace fusec::artifact
