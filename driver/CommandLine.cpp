//===- CommandLine.cpp - The one flag parser of the fusec tools -----------===//
//
// parseFlags() and the shared flag rows; see CommandLine.h for the syntax.
//
//===----------------------------------------------------------------------===//
#include "driver/CommandLine.h"

#include <cctype>

#include <algorithm>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "frontend/onnx/OnnxImporter.h"
#include "passes/cost/TargetSpec.h"

namespace fusec::driver {

absl::StatusOr<std::vector<std::string>> parseFlags(const std::vector<FlagSpec> &flags, int argc,
                                                    const char *const *argv) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positional.push_back(argv[i]);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::optional<std::string> value;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    const FlagSpec *spec = nullptr;
    for (const FlagSpec &f : flags)
      if (body == f.name) spec = &f;
    if (!spec) return absl::InvalidArgumentError(absl::StrCat("unknown option '", arg, "'"));
    if (spec->valueName && !value && spec->implicitValue) value = spec->implicitValue;
    if (spec->valueName && !value) {
      if (i + 1 >= argc)
        return absl::InvalidArgumentError(absl::StrCat("flag --", spec->name, " needs a value"));
      value = argv[++i];
    }
    if (!spec->valueName && value)
      return absl::InvalidArgumentError(absl::StrCat("flag --", spec->name, " takes no value"));
    if (absl::Status s = spec->apply(value.value_or("")); !s.ok()) return s;
  }
  return positional;
}

void printFlagHelp(const std::vector<FlagSpec> &flags, std::ostream &os, size_t column) {
  for (const FlagSpec &f : flags) {
    if (!f.help) continue;
    std::string left =
        absl::StrCat("--", f.name, f.valueName ? absl::StrCat("=", f.valueName) : "");
    os << "  " << left << std::string(left.size() < column ? column - left.size() : 1, ' ')
       << f.help << "\n";
  }
}

absl::Status parseShapeBinding(const std::string &text, std::string &name,
                               std::vector<int64_t> &dims) {
  size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return absl::InvalidArgumentError(
        absl::StrCat("--shape expects NAME=DIMS like input_ids=2x24, got '", text, "'"));
  name = text.substr(0, eq);
  dims.clear();
  for (absl::string_view d : absl::StrSplit(text.substr(eq + 1), 'x')) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(d, &n) || n < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("--shape ", text, ": '", std::string(d), "' is not a dimension >= 0"));
    dims.push_back(n);
  }
  return absl::OkStatus();
}

namespace {

/// A row whose value must be one of \p allowed.
FlagSpec choiceFlag(const char *name, const char *valueName, std::string &out,
                    std::vector<std::string> allowed, const char *what, const char *help) {
  return {
      name, valueName, help, [&out, allowed, name, what](const std::string &v) {
        for (const std::string &a : allowed)
          if (v == a) {
            out = v;
            return absl::OkStatus();
          }
        return absl::InvalidArgumentError(absl::StrCat(
            "unknown --", name, what, " '", v, "' (expected: ", absl::StrJoin(allowed, ", "), ")"));
      }};
}

}  // namespace

FlagSpec shapeFlag(ShapeMap &shapes) {
  return {
      "shape", "NAME=DIMS",
      "bind graph input NAME (an input's name, not a dim symbol) to static dims, e.g. "
      "input_ids=2x24 (repeatable, once per input); the symbols of its dims are then bound in "
      "every other input that uses them",
      [&shapes](const std::string &v) {
        std::string name;
        std::vector<int64_t> dims;
        if (absl::Status s = parseShapeBinding(v, name, dims); !s.ok()) return s;
        if (!shapes.emplace(name, dims).second)
          return absl::InvalidArgumentError(absl::StrCat("--shape names input '", name, "' twice"));
        return absl::OkStatus();
      }};
}

absl::StatusOr<DimRange> parseDimRange(const std::string &text) {
  DimRange r;
  if (!text.empty() && (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_')) {
    for (char c : text)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
        return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a symbol name"));
    r.same = text;
    return r;
  }
  std::string body = text;
  if (size_t at = body.find('@'); at != std::string::npos) {
    if (!absl::SimpleAtoi(body.substr(at + 1), &r.opt) || r.opt < 1)
      return absl::InvalidArgumentError(absl::StrCat("'", text, "': the extent after @ must be >= 1"));
    body = body.substr(0, at);
  }
  if (size_t dots = body.find(".."); dots != std::string::npos) {
    if (!absl::SimpleAtoi(body.substr(0, dots), &r.min) || !absl::SimpleAtoi(body.substr(dots + 2), &r.max))
      return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a range MIN..MAX"));
  } else {
    if (!absl::SimpleAtoi(body, &r.min)) return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a dimension"));
    r.max = r.min;
  }
  if (r.min < 1 || r.max < r.min || (r.opt && (r.opt < r.min || r.opt > r.max)))
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "': a range needs 1 <= MIN <= MAX and MIN <= @OPT <= MAX"));
  return r;
}

FlagSpec shapeFlag(ShapeMap &shapes, RangeMap &ranges) {
  FlagSpec f = shapeFlag(shapes);
  f.valueName = "NAME=DIMS";
  f.help =
      "bind graph input NAME (an input's name, not a dim symbol) to static dims, e.g. input_ids=2x24, "
      "or leave dims dynamic within a range, e.g. input_ids=1..64x1..4096 (MIN..MAX, optionally "
      "@OPT, the extent to optimise for; --target cpu and cuda), or equal to another input's symbolic dim "
      "(attention_mask=s72x1..4096); repeatable, once per input. The symbols of its dims are bound "
      "(or ranged) in every other input that uses them. Dims left symbolic by every --shape stay "
      "dynamic (1..2048) for --target cpu and cuda";
  f.apply = [&shapes, &ranges](const std::string &v) {
    // A dim given as a symbol name (attention_mask=batchxseq) takes the
    // range form too.
    bool named = false;
    if (const size_t at = v.rfind('='); at != std::string::npos)
      for (absl::string_view d : absl::StrSplit(v.substr(at + 1), 'x'))
        named = named || (!d.empty() && (std::isalpha(static_cast<unsigned char>(d[0])) || d[0] == '_'));
    if (v.find("..") == std::string::npos && !named) {
      std::string name;
      std::vector<int64_t> dims;
      if (absl::Status s = parseShapeBinding(v, name, dims); !s.ok()) return s;
      if (ranges.count(name) || !shapes.emplace(name, dims).second)
        return absl::InvalidArgumentError(absl::StrCat("--shape names input '", name, "' twice"));
      return absl::OkStatus();
    }
    const size_t eq = v.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
      return absl::InvalidArgumentError(
          absl::StrCat("--shape expects NAME=DIMS like input_ids=1..8x1..512, got '", v, "'"));
    const std::string name = v.substr(0, eq);
    std::vector<DimRange> dims;
    for (absl::string_view d : absl::StrSplit(v.substr(eq + 1), 'x')) {
      absl::StatusOr<DimRange> r = parseDimRange(std::string(d));
      if (!r.ok()) return absl::InvalidArgumentError(absl::StrCat("--shape ", v, ": ", r.status().message()));
      dims.push_back(*r);
    }
    if (shapes.count(name) || !ranges.emplace(name, dims).second)
      return absl::InvalidArgumentError(absl::StrCat("--shape names input '", name, "' twice"));
    return absl::OkStatus();
  };
  return f;
}

FlagSpec inputValueFlag(std::map<std::string, ir::Tensor> &values) {
  return {
      "input-value", "NAME=VALUE",
      "compile graph input NAME as a constant: VALUE is @FILE.pb (a serialized TensorProto, e.g. "
      "a test set's input_1.pb) or numbers v1,v2,... (a 1-D tensor, converted to the input's "
      "dtype); for inputs that decide shapes or indices (axes, pads, scales, sizes, k). The "
      "artifact then has no such input (repeatable, once per input)",
      [&values](const std::string &v) -> absl::Status {
        size_t eq = v.find("=@");
        if (eq == std::string::npos) eq = v.rfind('=');
        if (eq == std::string::npos || eq == 0)
          return absl::InvalidArgumentError(absl::StrCat(
              "--input-value '", v, "': expected NAME=@FILE.pb or NAME=v1,v2,..."));
        const std::string name = v.substr(0, eq), value = v.substr(eq + 1);
        ir::Tensor t;
        if (!value.empty() && value[0] == '@') {
          absl::StatusOr<ir::Tensor> loaded = frontend::loadTensorProtoFile(value.substr(1));
          if (!loaded.ok())
            return absl::InvalidArgumentError(
                absl::StrCat("--input-value ", name, ": ", loaded.status().message()));
          t = *std::move(loaded);
        } else {
          std::vector<double> numbers;
          for (absl::string_view part : absl::StrSplit(value, ',')) {
            double d = 0;
            if (!absl::SimpleAtod(part, &d))
              return absl::InvalidArgumentError(absl::StrCat(
                  "--input-value ", name, ": '", part, "' is not a number (NAME=v1,v2,... or NAME=@FILE.pb)"));
            numbers.push_back(d);
          }
          t = ir::Tensor::fromDoubles(ir::DType::kF64, {static_cast<int64_t>(numbers.size())}, numbers);
        }
        if (!values.emplace(name, std::move(t)).second)
          return absl::InvalidArgumentError(absl::StrCat("--input-value names input '", name, "' twice"));
        return absl::OkStatus();
      }};
}

FlagSpec precisionFlag(std::string &precision, const char *help) {
  return choiceFlag("precision", "P", precision, {"fp32", "fp16", "bf16"}, "", help);
}

namespace {

/// Help texts built from the table of targets, so that they list what
/// passes::resolveTarget accepts and name the defaults it picks.
const char *targetHelp() {
  static const std::string *text = [] {
    std::vector<std::string> names;
    for (const passes::TargetInfo &t : passes::targetTable())
      names.push_back(names.empty() ? absl::StrCat(t.name, " (default)") : t.name);
    return new std::string(absl::StrCat("code generation target: ", absl::StrJoin(names, ", ")));
  }();
  return text->c_str();
}

const char *archHelp() {
  static const std::string *text = [] {
    std::vector<std::string> perTarget;
    for (const passes::TargetInfo &t : passes::targetTable()) {
      std::vector<std::string> archs;
      for (const passes::ArchInfo &a : t.archs)
        archs.push_back(a.arch == "*" ? std::string("any ") + t.name + " name its backend accepts" : a.arch);
      perTarget.push_back(absl::StrCat(absl::StrJoin(archs, ", "), " (", t.name, ")"));
    }
    return new std::string(
        absl::StrCat("architecture to generate code for: ", absl::StrJoin(perTarget, "; "),
                     " (default: the device's own; sm_90a: Hopper's wgmma/TMA attention kernel)"));
  }();
  return text->c_str();
}

const char *deviceHelp() {
  static const std::string *text = [] {
    std::vector<std::string> perTarget, defaults;
    for (const passes::TargetInfo &t : passes::targetTable()) {
      perTarget.push_back(absl::StrCat(absl::StrJoin(t.devices, ", "), " (", t.name, ")"));
      defaults.push_back(absl::StrCat(t.defaultDevice, " for ", t.name));
      for (const passes::ArchInfo &a : t.archs)
        if (a.defaultDevice != t.defaultDevice && a.arch != "*")
          defaults.push_back(absl::StrCat(a.defaultDevice, " for --arch ", a.arch));
    }
    return new std::string(
        absl::StrCat("roofline parameters to decide with: ", absl::StrJoin(perTarget, "; "),
                     " (default: ", absl::StrJoin(defaults, ", "), ")"));
  }();
  return text->c_str();
}

}  // namespace

FlagSpec targetFlag(std::string &target) {
  return stringFlag("target", "BACKEND", target, targetHelp());
}

FlagSpec archFlag(std::string &arch) { return stringFlag("arch", "ARCH", arch, archHelp()); }

FlagSpec deviceFlag(std::string &device) {
  return stringFlag("device", "NAME", device, deviceHelp());
}

FlagSpec allowTf32Flag(bool &allowTf32) {
  return boolFlag("allow-tf32", allowTf32, "let f32 GEMMs use TF32 tensor cores");
}

FlagSpec dumpFusionFlag(std::string &format, std::vector<std::string> formats) {
  static const char *const kHelpAll =
      "print every fusion decision: text (default), json, or dot (Graphviz)";
  static const char *const kHelpNoDot = "print every fusion decision: text (default) or json";
  const bool dot = std::find(formats.begin(), formats.end(), "dot") != formats.end();
  FlagSpec f =
      choiceFlag("dump-fusion", "FORMAT", format, formats, " format", dot ? kHelpAll : kHelpNoDot);
  f.implicitValue = "text";
  return f;
}

FlagSpec debugOnlyFlag(std::vector<std::string> &passes) {
  return {"debug-only", "PASS",
          "print the named pass's debug output (e.g. fusion refusals) on stderr",
          [&passes](const std::string &v) {
            if (v.empty()) return absl::InvalidArgumentError("--debug-only needs a pass name");
            passes.push_back(v);
            return absl::OkStatus();
          }};
}

FlagSpec passesFlag(std::string &passes, const char *help) {
  return stringFlag("passes", "A,B,...", passes, help);
}

FlagSpec noVerifyFlag(bool &verify) {
  return {"no-verify", nullptr, "do not run the IR verifier after each pass",
          [&verify](const std::string &) {
            verify = false;
            return absl::OkStatus();
          }};
}

FlagSpec printLocFlag(bool &printLocations) {
  return boolFlag("print-loc", printLocations, "print each node's location (its ONNX node name)");
}

FlagSpec elideConstantsFlag(int64_t &elideLargerThan) {
  return {"elide-constants", "N", "print constants with more than N elements as dense<elided>",
          [&elideLargerThan](const std::string &v) {
            int64_t n = 0;
            if (!absl::SimpleAtoi(v, &n) || n < 0)
              return absl::InvalidArgumentError(
                  absl::StrCat("--elide-constants expects a count >= 0, got '", v, "'"));
            elideLargerThan = n;
            return absl::OkStatus();
          }};
}

FlagSpec boolFlag(const char *name, bool &flag, const char *help) {
  return {name, nullptr, help, [&flag](const std::string &) {
            flag = true;
            return absl::OkStatus();
          }};
}

FlagSpec stringFlag(const char *name, const char *valueName, std::string &value, const char *help) {
  return {name, valueName, help, [&value](const std::string &v) {
            value = v;
            return absl::OkStatus();
          }};
}

FlagSpec intFlag(const char *name, const char *valueName, int64_t &value, int64_t min, int64_t max,
                 const char *help) {
  return {name, valueName, help, [&value, name, min, max](const std::string &v) {
            int64_t n = 0;
            if (!absl::SimpleAtoi(v, &n) || n < min || n > max)
              return absl::InvalidArgumentError(absl::StrCat("--", name, " expects an integer in [",
                                                             min, ", ", max, "], got '", v, "'"));
            value = n;
            return absl::OkStatus();
          }};
}

}  // namespace fusec::driver
