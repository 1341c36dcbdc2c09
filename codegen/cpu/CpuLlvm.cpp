//===- CpuLlvm.cpp - Target machine, optimisation, object and lld link ----===//
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/cpu/CpuIr.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "lld/Common/CommonLinkerContext.h"
#include "lld/Common/Driver.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Triple.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#pragma GCC diagnostic pop

namespace fusec::codegen::cpu {

namespace fs = std::filesystem;

namespace {

void initLlvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

/// The ISA features a kernel may use that the runtime can check on a host
/// (LLVM spelling; the manifest's cpu_features lists those of the target).
const char *const kX86Features[] = {
    "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2", "fma", "f16c", "bmi", "bmi2",
    "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512vnni", "avx512bf16", "avx512fp16", nullptr};
const char *const kArmFeatures[] = {"neon", "fullfp16", "bf16", "sve", nullptr};

absl::StatusOr<std::unique_ptr<llvm::TargetMachine>> makeMachine(const CpuTarget &t) {
  initLlvm();
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) return absl::InternalError(absl::StrCat("cpu: no LLVM target for ", t.triple, ": ", err));
  llvm::TargetOptions opts;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      t.triple, t.cpu, t.featureString, opts, llvm::Reloc::PIC_, llvm::None, llvm::CodeGenOpt::Aggressive));
  if (!tm) return absl::InternalError(absl::StrCat("cpu: cannot create a target machine for ", t.cpu));
  return tm;
}

/// The size in bytes of the host's largest cache (Linux sysfs,
/// /sys/devices/system/cpu/cpu0/cache/index*/size, e.g. "32768K"); 0 when
/// unknown.
int64_t hostLastLevelCacheBytes() {
  int64_t best = 0;
  for (int i = 0; i < 8; ++i) {
    std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    std::string text;
    if (!(f >> text) || text.empty()) continue;
    char *end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (v <= 0 || !end) continue;
    const int64_t scale = *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : *end == 'G' ? int64_t{1} << 30 : 1;
    best = std::max<int64_t>(best, int64_t(v) * scale);
  }
  return best;
}

/// x86 CPU names newer than the LLVM fusec links (LLVM 14) that it can still
/// target exactly: the nearest older processor LLVM knows plus the features
/// the newer one adds. znver4 (LLVM 16; AMD's "Zen 4" software optimisation
/// guide, 57647, and LLVM's X86.td ProcessorFeatures.ZN4Features): znver3 +
/// AVX-512 F/CD/BW/DQ/VL/IFMA/VBMI/VBMI2/VNNI/BITALG/VPOPCNTDQ/BF16 + GFNI.
/// Used only when this LLVM does not know the name itself.
struct NewerCpu {
  const char *name, *base, *features;
};
constexpr NewerCpu kNewerX86Cpus[] = {
    {"znver4", "znver3",
     "+avx512f,+avx512cd,+avx512bw,+avx512dq,+avx512vl,+avx512ifma,+avx512vbmi,+avx512vbmi2,"
     "+avx512vnni,+avx512bitalg,+avx512vpopcntdq,+avx512bf16,+gfni"},
};

}  // namespace

absl::StatusOr<CpuTarget> resolveCpuTarget(const std::string &cpu) {
  initLlvm();
  CpuTarget t;
  t.triple = llvm::sys::getProcessTriple();
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) return absl::InternalError(absl::StrCat("cpu: no LLVM target for the host (", t.triple, "): ", err));
  // The host's own name is the host too: the artifact writer hands back the
  // name resolveArch() gave, and the name alone can lack what the host has
  // (LLVM 14 calls a Zen 4 "znver3", whose table has no AVX-512).
  const bool host = cpu.empty() || cpu == "native" || cpu == llvm::sys::getHostCPUName();
  t.cpu = host ? std::string(llvm::sys::getHostCPUName()) : cpu;
  // An empty CPU name creates the subtarget without a diagnostic; then the
  // name is checked against the target's processor table.
  std::unique_ptr<llvm::MCSubtargetInfo> sti(target->createMCSubtargetInfo(t.triple, "", ""));
  if (sti && !host && !sti->isCPUStringValid(t.cpu) && llvm::Triple(t.triple).isX86()) {
    for (const NewerCpu &n : kNewerX86Cpus)
      if (t.cpu == n.name && sti->isCPUStringValid(n.base)) {
        t.cpu = n.base;
        t.featureString = n.features;
        break;
      }
  }
  if (!sti || !sti->isCPUStringValid(t.cpu))
    return absl::InvalidArgumentError(absl::StrCat("invalid --arch '", cpu, "': not an LLVM CPU name for ", t.triple,
                                                   " (e.g. znver4, skylake-avx512, x86-64-v3; `llc -mcpu=help` "
                                                   "lists the names LLVM ", LLVM_VERSION_MAJOR, " knows)"));
  std::vector<std::string> enabled;
  if (host) {
    llvm::StringMap<bool> features;
    if (llvm::sys::getHostCPUFeatures(features)) {
      std::vector<std::string> fs;
      for (const auto &kv : features) {
        fs.push_back(absl::StrCat(kv.second ? "+" : "-", kv.first().str()));
        if (kv.second) enabled.push_back(kv.first().str());
      }
      std::sort(fs.begin(), fs.end());
      t.featureString = absl::StrJoin(fs, ",");
    }
  }
  // The features the CPU name implies (plus the host's, when native).
  std::unique_ptr<llvm::MCSubtargetInfo> full(target->createMCSubtargetInfo(t.triple, t.cpu, t.featureString));
  const bool x86 = llvm::Triple(t.triple).isX86();
  const char *const *list = x86 ? kX86Features : kArmFeatures;
  for (const char *const *fp = list; *fp; ++fp) {
    const char *f = *fp;
    if (full->checkFeatures(absl::StrCat("+", f))) enabled.push_back(f);
  }
  std::sort(enabled.begin(), enabled.end());
  enabled.erase(std::unique(enabled.begin(), enabled.end()), enabled.end());
  for (const char *const *fp = list; *fp; ++fp) {
    const char *f = *fp;
    if (std::binary_search(enabled.begin(), enabled.end(), std::string(f))) t.features.push_back(f);
  }
  auto has = [&](const char *f) { return std::binary_search(enabled.begin(), enabled.end(), std::string(f)); };
  t.vectorBits = has("avx512f") ? 512 : has("avx") ? 256 : 128;
  t.x86 = x86;
  if (host) {
    if (int64_t llc = hostLastLevelCacheBytes(); llc > 0) t.streamingStoreBytes = llc;
  }
  if (const char *env = std::getenv("FUSEC_CPU_STREAM_BYTES"); env && *env) {
    char *end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end && *end == 0 && v >= 0) t.streamingStoreBytes = v;
  }
  // Testing knob: FUSEC_CPU_INLINE_WORK=0 sends every step through
  // parallel_for (the unit tests' shapes are all "tiny" otherwise).
  if (const char *env = std::getenv("FUSEC_CPU_INLINE_WORK"); env && *env) {
    char *end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end && *end == 0 && v >= 0) t.inlineWork = v;
  }
  return t;
}

CpuModuleBuilder::CpuModuleBuilder(const CpuTarget &target, const std::string &moduleName)
    : impl_(std::make_unique<Impl>(target, moduleName)) {}

CpuModuleBuilder::~CpuModuleBuilder() = default;

std::string CpuModuleBuilder::irText() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  impl_->mod->print(os, nullptr);
  return os.str();
}

void CpuModuleBuilder::addConstantString(const std::string &symbol, const std::string &text) {
  Impl &I = *impl_;
  llvm::Constant *init = llvm::ConstantDataArray::getString(I.ctx, text, /*AddNull=*/true);
  auto *g = new llvm::GlobalVariable(*I.mod, init->getType(), /*isConstant=*/true,
                                     llvm::GlobalValue::ExternalLinkage, init, symbol);
  g->setVisibility(llvm::GlobalValue::DefaultVisibility);
}

void CpuModuleBuilder::setSymbols(std::vector<std::string> names) { impl_->symbolNames = std::move(names); }

absl::StatusOr<CpuObject> CpuModuleBuilder::finish(bool wantIr) {
  Impl &I = *impl_;
  llvm::Module &M = *I.mod;
  if (!I.symbolError.empty())
    return absl::InternalError(absl::StrCat("cpu: a kernel reads symbol '", I.symbolError,
                                            "', which is not one of the module's dynamic dims"));
  {
    std::string err;
    llvm::raw_string_ostream os(err);
    if (llvm::verifyModule(M, &os))
      return absl::InternalError(absl::StrCat("cpu: the generated LLVM IR does not verify: ", os.str()));
  }
  auto tmOr = makeMachine(I.target);
  if (!tmOr.ok()) return tmOr.status();
  std::unique_ptr<llvm::TargetMachine> tm = std::move(*tmOr);
  M.setTargetTriple(I.target.triple);
  M.setDataLayout(tm->createDataLayout());
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    pto.LoopVectorization = true;
    pto.SLPVectorization = true;
    llvm::PassBuilder pb(tm.get(), pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(M, mam);
  }
  CpuObject out;
  out.workspaceBytesPerThread = I.workspace;
  if (wantIr) {
    llvm::raw_string_ostream os(out.ir);
    M.print(os, nullptr);
    os.flush();
  }
  llvm::SmallVector<char, 0> buf;
  {
    llvm::raw_svector_ostream os(buf);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile))
      return absl::InternalError(absl::StrCat("cpu: LLVM cannot emit an object file for ", I.target.cpu));
    pm.run(M);
  }
  out.object.assign(buf.begin(), buf.end());
  return out;
}

absl::Status linkSharedLibrary(const std::string &object, const std::string &workDir, const std::string &outPath) {
  // lld keeps global state per link; one link at a time.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const fs::path obj = fs::path(workDir) / "fusec-model.o";
  {
    std::ofstream f(obj, std::ios::binary | std::ios::trunc);
    f.write(object.data(), static_cast<std::streamsize>(object.size()));
    if (!f) return absl::InternalError(absl::StrCat("cpu: cannot write '", obj.string(), "'"));
  }
  std::vector<std::string> args = {"ld.lld", "-shared", "-o", outPath, "-soname", fs::path(outPath).filename().string(),
                                   "-z", "noexecstack", "--hash-style=both", obj.string()};
  // libm for the f64 math and sinf/cosf the kernels call (found at run
  // time in any case; naming it records the dependency).
  for (const char *libm : {"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                           "/lib64/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6"}) {
    std::error_code ec;
    if (fs::exists(libm, ec)) {
      args.push_back(libm);
      break;
    }
  }
  std::vector<const char *> argv;
  for (const std::string &a : args) argv.push_back(a.c_str());
  std::string outs, errs;
  llvm::raw_string_ostream os(outs), es(errs);
  const bool ok = lld::elf::link(argv, os, es, /*exitEarly=*/false, /*disableOutput=*/false);
  lld::CommonLinkerContext::destroy();  // lld 14: the next link starts from a fresh context
  os.flush();
  es.flush();
  std::error_code ec;
  fs::remove(obj, ec);
  if (!ok) return absl::InternalError(absl::StrCat("cpu: lld failed linking '", outPath, "': ", errs, outs));
  return absl::OkStatus();
}

}  // namespace fusec::codegen::cpu
