//===- fusec-node-tests.cpp - Run the ONNX backend node tests -------------===//
//
// fusec-node-tests [ROOT...] [--filter=S] [--verbose] [--expected-failures=F]
//
// Runs every test folder (model.onnx + test_data_set_*/{input,output}_<i>.pb,
// the ONNX backend-test layout) under each ROOT through the importer and the
// reference interpreter and classifies it:
//   PASSED   every output of every data set matches (interp::compareTensors,
//            default per-dtype tolerances)
//   FAILED   an import error other than Unimplemented, a runtime error, a
//            crash or timeout, or a mismatch
//   SKIPPED  the model uses an op outside the op table (or another domain),
//            the importer answers Unimplemented (opset, attribute form), or
//            the interpreter has no function for an op
//   XFAIL    FAILED, and listed in --expected-failures
// A model whose import needs graph inputs bound at compile time (a Loop's
// trip count: frontend::inputValuesNeeded) is imported once per data set
// with those inputs bound to the data set's values, as `fusec
// --input-value` and compile_node_tests.sh would.
// Each test runs in a forked child so that a crash or hang in one kernel is
// reported as that test's failure. Exit status 0 iff there are no unexpected
// failures (FAILED tests, or listed tests that passed).
//
//===----------------------------------------------------------------------===//
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "driver/CommandLine.h"
#include "frontend/onnx/OnnxImporter.h"
#include "interp/Compare.h"
#include "interp/Interpreter.h"
#include "ir/OpTable.h"
#include "onnx/onnx_pb.h"
#include "support/Status.h"

namespace fs = std::filesystem;
using namespace fusec;

namespace {

constexpr const char *kDefaultRoot = "/usr/share/libonnx-testdata/data/node";

constexpr const char *kUsage = R"usage(usage: fusec-node-tests [ROOT...] [options]

Runs the ONNX backend node tests found under each ROOT (default
/usr/share/libonnx-testdata/data/node) through the importer and the
reference interpreter.

  --filter=S               only tests whose folder name contains S
  --verbose                one line per test, and every skipped test
  --expected-failures=F    F lists tests that must fail, one per line:
                           "test_name  reason" ('#' starts a comment)
  --timeout=SECONDS        per-test limit (default 120)
  --no-fork                run tests in-process (for debugging)
  --help                   this text

Totals: "node tests: N passed, M failed, K skipped (of T)"; with an
expected-failures list, also "X xfail". Exit status 0 iff no test failed
unexpectedly and no listed test passed.
)usage";

struct Options {
  std::vector<std::string> roots;
  std::string filter;
  bool verbose = false;
  std::string expectedFailures;
  int timeoutS = 120;
  bool fork = true;
};

enum class Outcome { kPassed, kFailed, kSkipped };

struct Result {
  Outcome outcome = Outcome::kFailed;
  std::string message;
};

//===----------------------------------------------------------------------===//
// Reading the model's ops directly (works even when the import fails).
//===----------------------------------------------------------------------===//

struct ModelInfo {
  std::vector<std::string> opTypes;       ///< distinct, in order of appearance
  std::vector<std::string> unsupported;   ///< op types fusec's table lacks
  std::vector<std::string> feedNames;     ///< graph inputs that are not initializers
};

absl::StatusOr<ModelInfo> readModelInfo(const fs::path &model) {
  std::ifstream in(model, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", model.string()));
  onnx::ModelProto proto;
  if (!proto.ParseFromIstream(&in))
    return absl::InvalidArgumentError(absl::StrCat("cannot parse ", model.string()));
  ModelInfo info;
  std::set<std::string> seen, bad;
  int64_t opset = 0;
  for (const auto &os : proto.opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx") opset = os.version();
  for (const auto &node : proto.graph().node()) {
    const std::string &d = node.domain();
    bool defaultDomain = d.empty() || d == "ai.onnx";
    std::string name = defaultDomain ? node.op_type() : absl::StrCat(d, ".", node.op_type());
    if (seen.insert(name).second) info.opTypes.push_back(name);
    if (!frontend::importerSupportsOp(d, node.op_type(), opset) && bad.insert(name).second)
      info.unsupported.push_back(name);
  }
  std::set<std::string> inits;
  for (const auto &t : proto.graph().initializer()) inits.insert(t.name());
  for (const auto &v : proto.graph().input())
    if (!inits.count(v.name())) info.feedNames.push_back(v.name());
  return info;
}

std::string normalise(const std::string &s) {
  std::string out;
  for (char c : s)
    if (c != '_') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

/// The op a test exercises: the model's op type whose name the test name
/// starts with (longest match), else the single op type, else
/// "<first word> (expanded)" for function-expanded tests.
std::string opKey(const std::string &test, const ModelInfo &info) {
  std::string t = test.rfind("test_", 0) == 0 ? test.substr(5) : test;
  std::string nt = normalise(t);
  std::string best;
  for (const std::string &op : info.opTypes) {
    std::string n = normalise(op);
    if (nt.rfind(n, 0) == 0 && n.size() > normalise(best).size()) best = op;
  }
  if (!best.empty()) return best;
  if (info.opTypes.size() == 1) return info.opTypes[0];
  // Function-expanded tests: match the op table instead.
  for (const ir::OpInfo &op : ir::allOps()) {
    std::string n = normalise(op.name);
    if (nt.rfind(n, 0) == 0 && n.size() > normalise(best).size()) best = op.name;
  }
  if (!best.empty()) return best;
  std::string first = t.substr(0, t.find('_'));
  return absl::StrCat(first, " (multi-op)");
}

//===----------------------------------------------------------------------===//
// Running one test.
//===----------------------------------------------------------------------===//

/// Loads DIR/<prefix>_<i>.pb for i = 0, 1, ... until one is missing.
absl::StatusOr<std::vector<std::pair<std::string, ir::Tensor>>> loadSeries(
    const fs::path &dir, const std::string &prefix) {
  std::vector<std::pair<std::string, ir::Tensor>> out;
  for (int i = 0;; ++i) {
    fs::path p = dir / absl::StrCat(prefix, "_", i, ".pb");
    std::error_code ec;
    if (!fs::exists(p, ec)) break;
    std::string name;
    FUSEC_ASSIGN_OR_RETURN(ir::Tensor tensor, frontend::loadTensorProtoFile(p.string(), &name));
    out.emplace_back(name, std::move(tensor));
  }
  return out;
}

/// One line: newlines and runs of spaces collapse to one space.
std::string oneLine(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out.push_back(c);
  }
  return out;
}

std::string statusText(const absl::Status &s) {
  return absl::StrCat(absl::StatusCodeToString(s.code()), ": ", oneLine(std::string(s.message())));
}

/// ONNX <= 1.12 wrote bfloat16 test data as uint16 tensors holding the bf16
/// bits (numpy has no bfloat16). \returns \p t with its bits reinterpreted
/// as bf16 when \p want is bf16 and \p t is such a u16 tensor.
ir::Tensor fixBf16(ir::Tensor t, ir::DType want) {
  if (want != ir::DType::kBF16 || t.dtype() != ir::DType::kU16) return t;
  ir::Tensor b(ir::DType::kBF16, t.shape());
  b.bytes() = t.bytes();
  return b;
}

/// Runs one data set; \returns an empty string on success, else why not.
/// \p bound: graph inputs compiled in as constants (--input-value), whose
/// data is not fed again.
std::string runDataSet(const ir::Graph &graph, const ModelInfo &info, const fs::path &dir,
                       const std::set<std::string> &bound = {}) {
  auto inputs = loadSeries(dir, "input");
  if (!inputs.ok()) return absl::StrCat("loading inputs: ", statusText(inputs.status()));
  auto expected = loadSeries(dir, "output");
  if (!expected.ok()) return absl::StrCat("loading outputs: ", statusText(expected.status()));
  if (expected->empty()) return "data set has no output_0.pb";
  std::map<std::string, ir::Tensor> feeds;
  for (size_t i = 0; i < inputs->size(); ++i) {
    auto &[name, tensor] = (*inputs)[i];
    // Inputs are positional over the model's non-initializer inputs; an
    // input's own name wins when it names a graph input.
    std::string key = name;
    if (key.empty() || !graph.findValue(key)) {
      if (i >= info.feedNames.size())
        return absl::StrCat("input_", i, ".pb has no matching graph input");
      key = info.feedNames[i];
    }
    if (bound.count(key)) continue;
    if (const ir::Value *v = graph.findValue(key)) tensor = fixBf16(std::move(tensor), v->type().dtype);
    feeds[key] = std::move(tensor);
  }
  auto results = interp::runGraph(graph, feeds);
  if (!results.ok()) return absl::StrCat("run: ", statusText(results.status()));
  if (results->size() != expected->size())
    return absl::StrCat("graph has ", results->size(), " outputs, data set has ",
                        expected->size());
  std::vector<std::string> problems;
  for (size_t i = 0; i < expected->size(); ++i) {
    ir::Tensor want = fixBf16((*expected)[i].second, (*results)[i].dtype());
    interp::CompareResult c = interp::compareTensors((*results)[i], want);
    if (!c.pass)
      problems.push_back(absl::StrCat("output ", i, " '", graph.outputs()[i]->name(), "': ",
                                      oneLine(c.message)));
  }
  return absl::StrJoin(problems, "; ");
}

/// The test folder's test_data_set_* folders, in name order.
std::vector<fs::path> dataSets(const fs::path &dir) {
  std::vector<fs::path> sets;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  return sets;
}

/// runTest for a model that imports only with the graph inputs \p need
/// bound: per data set, those inputs (positional over info.feedNames, or
/// named) are bound to its values and the model imported and run.
Result runBoundTest(const fs::path &dir, const ModelInfo &info, const std::vector<std::string> &need) {
  const std::vector<fs::path> sets = dataSets(dir);
  if (sets.empty()) return {Outcome::kFailed, "no test_data_set_* folder"};
  const std::set<std::string> bound(need.begin(), need.end());
  for (const fs::path &s : sets) {
    auto inputs = loadSeries(s, "input");
    if (!inputs.ok()) return {Outcome::kFailed, absl::StrCat("loading inputs: ", statusText(inputs.status()))};
    frontend::ImportOptions options;
    for (size_t i = 0; i < inputs->size(); ++i) {
      const auto &[name, tensor] = (*inputs)[i];
      std::string key = name;
      if (!bound.count(key) && i < info.feedNames.size()) key = info.feedNames[i];
      if (bound.count(key)) options.inputValues[key] = tensor;
    }
    auto graph = frontend::importOnnxModel((dir / "model.onnx").string(), options);
    if (!graph.ok()) {
      Outcome o = graph.status().code() == absl::StatusCode::kUnimplemented ? Outcome::kSkipped
                                                                              : Outcome::kFailed;
      return {o, absl::StrCat(o == Outcome::kSkipped ? "importer" : "import", " (inputs bound: ",
                              absl::StrJoin(need, ", "), "): ",
                              oneLine(std::string(graph.status().message())))};
    }
    std::set<std::string> lacking;
    for (const ir::Node *n : (*graph)->nodes())
      if (!interp::supports(n->kind())) lacking.insert(n->opType());
    if (!lacking.empty())
      return {Outcome::kSkipped, absl::StrCat("interpreter lacks ", absl::StrJoin(lacking, ", "))};
    std::string why = runDataSet(**graph, info, s, bound);
    if (!why.empty()) return {Outcome::kFailed, absl::StrCat(s.filename().string(), ": ", why)};
  }
  return {Outcome::kPassed, ""};
}

Result runTest(const fs::path &dir, const ModelInfo &info) {
  auto graph = frontend::importOnnxModel((dir / "model.onnx").string());
  if (!graph.ok()) {
    std::vector<std::string> need = frontend::inputValuesNeeded(graph.status());
    if (!need.empty()) return runBoundTest(dir, info, need);
    if (graph.status().code() == absl::StatusCode::kUnimplemented)
      return {Outcome::kSkipped,
              absl::StrCat("importer: ", oneLine(std::string(graph.status().message())))};
    return {Outcome::kFailed, absl::StrCat("import: ", statusText(graph.status()))};
  }
  std::set<std::string> lacking;
  for (const ir::Node *n : (*graph)->nodes())
    if (!interp::supports(n->kind())) lacking.insert(n->opType());
  if (!lacking.empty())
    return {Outcome::kSkipped, absl::StrCat("interpreter lacks ", absl::StrJoin(lacking, ", "))};
  const std::vector<fs::path> sets = dataSets(dir);
  if (sets.empty()) return {Outcome::kFailed, "no test_data_set_* folder"};
  for (const fs::path &s : sets) {
    std::string why = runDataSet(**graph, info, s);
    if (!why.empty()) return {Outcome::kFailed, absl::StrCat(s.filename().string(), ": ", why)};
  }
  return {Outcome::kPassed, ""};
}

/// Runs runTest in a forked child with a time limit; a crash or timeout is a
/// failure. The child sends "<outcome digit><message>" through a pipe.
Result runForked(const fs::path &dir, const ModelInfo &info, int timeoutS) {
  int fds[2];
  if (pipe(fds) != 0) return runTest(dir, info);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return runTest(dir, info);
  }
  if (pid == 0) {
    close(fds[0]);
    alarm(static_cast<unsigned>(timeoutS));
    Result r = runTest(dir, info);
    std::string msg = absl::StrCat(static_cast<int>(r.outcome), r.message);
    size_t off = 0;
    while (off < msg.size()) {
      ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string buf;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGALRM) return {Outcome::kFailed, absl::StrCat("timed out after ", timeoutS, " s")};
    return {Outcome::kFailed, absl::StrCat("crashed with signal ", sig, " (", strsignal(sig), ")")};
  }
  if (buf.empty() || buf[0] < '0' || buf[0] > '2')
    return {Outcome::kFailed, "test process exited without a result"};
  return {static_cast<Outcome>(buf[0] - '0'), buf.substr(1)};
}

//===----------------------------------------------------------------------===//
// Driver.
//===----------------------------------------------------------------------===//

/// Reads "test_name reason..." lines; '#' comments and blank lines ignored.
absl::StatusOr<std::map<std::string, std::string>> readExpectedFailures(const std::string &path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    std::istringstream ss(line);
    std::string name;
    if (!(ss >> name)) continue;
    std::string reason;
    std::getline(ss, reason);
    size_t b = reason.find_first_not_of(" \t");
    out[name] = b == std::string::npos ? "" : reason.substr(b);
  }
  return out;
}

/// Parses argv with the tools' shared parser (driver/CommandLine.h);
/// \returns an error message (empty on success).
std::string parseArgs(int argc, char **argv, Options &opt) {
  int64_t timeout = opt.timeoutS;
  bool noFork = false;
  const std::vector<driver::FlagSpec> flags = {
      driver::boolFlag("verbose", opt.verbose, "one line per test"),
      driver::boolFlag("v", opt.verbose, nullptr),  // alias of --verbose
      driver::boolFlag("no-fork", noFork, "run tests in-process"),
      driver::stringFlag("filter", "S", opt.filter, "only tests whose name contains S"),
      driver::stringFlag("expected-failures", "F", opt.expectedFailures, "expected failures"),
      driver::intFlag("timeout", "SECONDS", timeout, 1, 1000000, "per-test limit"),
  };
  absl::StatusOr<std::vector<std::string>> positional = driver::parseFlags(flags, argc, argv);
  if (!positional.ok()) return std::string(positional.status().message());
  opt.roots = *positional;
  opt.timeoutS = static_cast<int>(timeout);
  opt.fork = !noFork;
  if (opt.roots.empty()) opt.roots.push_back(kDefaultRoot);
  return "";
}

struct OpCounts {
  int passed = 0, failed = 0, xfail = 0, skipped = 0;
};

}  // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  Options opt;
  std::string err = parseArgs(argc, argv, opt);
  if (!err.empty()) {
    std::fprintf(stderr, "fusec-node-tests: error: %s\n%s", err.c_str(), kUsage);
    return 2;
  }
  std::map<std::string, std::string> xfails;
  if (!opt.expectedFailures.empty()) {
    auto x = readExpectedFailures(opt.expectedFailures);
    if (!x.ok()) {
      std::fprintf(stderr, "fusec-node-tests: error: %s\n", std::string(x.status().message()).c_str());
      return 2;
    }
    xfails = *x;
  }

  // Collect test folders (sorted by name within each root).
  std::vector<fs::path> tests;
  for (const std::string &root : opt.roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) {
      std::fprintf(stderr, "fusec-node-tests: error: '%s' is not a folder\n", root.c_str());
      return 2;
    }
    std::vector<fs::path> here;
    for (const auto &e : fs::directory_iterator(root, ec)) {
      if (!e.is_directory() || !fs::exists(e.path() / "model.onnx")) continue;
      if (!opt.filter.empty() && e.path().filename().string().find(opt.filter) == std::string::npos)
        continue;
      here.push_back(e.path());
    }
    std::sort(here.begin(), here.end());
    tests.insert(tests.end(), here.begin(), here.end());
  }

  int passed = 0, failed = 0, skipped = 0, xfailed = 0, xpassed = 0;
  std::map<std::string, OpCounts> perOp;
  std::map<std::string, std::vector<std::string>> skipsByReason;
  std::set<std::string> seenNames;
  for (const fs::path &dir : tests) {
    std::string name = dir.filename().string();
    seenNames.insert(name);
    Result r;
    std::string op = "?";
    auto info = readModelInfo(dir / "model.onnx");
    if (!info.ok()) {
      r = {Outcome::kFailed, absl::StrCat("reading model: ", statusText(info.status()))};
    } else {
      op = opKey(name, *info);
      if (!info->unsupported.empty()) {
        r = {Outcome::kSkipped,
             absl::StrCat("unsupported op ", absl::StrJoin(info->unsupported, ", "))};
      } else {
        r = opt.fork ? runForked(dir, *info, opt.timeoutS) : runTest(dir, *info);
      }
    }
    OpCounts &c = perOp[op];
    auto xf = xfails.find(name);
    switch (r.outcome) {
      case Outcome::kPassed:
        if (xf != xfails.end()) {
          ++xpassed;
          ++c.passed;
          std::printf("UNEXPECTED PASS %s [%s] (listed: %s)\n", name.c_str(), op.c_str(),
                      xf->second.c_str());
        } else {
          ++passed;
          ++c.passed;
          if (opt.verbose) std::printf("PASSED  %s [%s]\n", name.c_str(), op.c_str());
        }
        break;
      case Outcome::kFailed:
        if (xf != xfails.end()) {
          ++xfailed;
          ++c.xfail;
          if (opt.verbose)
            std::printf("XFAIL   %s [%s]: %s (%s)\n", name.c_str(), op.c_str(),
                        xf->second.c_str(), r.message.c_str());
        } else {
          ++failed;
          ++c.failed;
          std::printf("FAILED  %s [%s]: %s\n", name.c_str(), op.c_str(), r.message.c_str());
        }
        break;
      case Outcome::kSkipped:
        ++skipped;
        ++c.skipped;
        skipsByReason[r.message].push_back(name);
        if (opt.verbose) std::printf("SKIPPED %s [%s]: %s\n", name.c_str(), op.c_str(), r.message.c_str());
        break;
    }
    std::fflush(stdout);
  }

  // Skip reasons, most common first.
  std::vector<std::pair<std::string, std::vector<std::string>>> reasons(skipsByReason.begin(),
                                                                        skipsByReason.end());
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto &a, const auto &b) { return a.second.size() > b.second.size(); });
  for (const auto &[why, names] : reasons) {
    std::vector<std::string> shown(names.begin(), names.begin() + std::min<size_t>(names.size(), 3));
    std::printf("SKIPPED %3zu: %s (%s%s)\n", names.size(), why.c_str(),
                absl::StrJoin(shown, ", ").c_str(), names.size() > 3 ? ", ..." : "");
  }

  // Per-op summary.
  std::printf("\nper-op summary (passed / failed / xfail / skipped):\n");
  for (const auto &[op, c] : perOp)
    std::printf("  %-32s %4d %4d %4d %4d%s\n", op.c_str(), c.passed, c.failed, c.xfail, c.skipped,
                c.failed ? "  <- failures" : "");

  for (const auto &[name, why] : xfails)
    if (!seenNames.count(name) && opt.filter.empty())
      std::printf("note: expected failure %s was not found\n", name.c_str());

  int total = static_cast<int>(tests.size());
  if (xfails.empty()) {
    std::printf("node tests: %d passed, %d failed, %d skipped (of %d)\n", passed + xpassed, failed,
                skipped, total);
  } else {
    std::printf("node tests: %d passed, %d failed, %d xfail, %d skipped (of %d)\n",
                passed + xpassed, failed, xfailed, skipped, total);
  }
  if (xpassed)
    std::printf("%d expected failure(s) passed: remove them from %s\n", xpassed,
                opt.expectedFailures.c_str());
  return failed == 0 && xpassed == 0 ? 0 : 1;
}
