//===- Nvcc.cpp - Finding and running nvcc for the artifact's libmodel.so -===//
#include "codegen/cuda/Nvcc.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace fusec::codegen {

namespace fs = std::filesystem;

namespace {

bool isExecutableFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string findNvcc(const std::string &hint) {
  if (!hint.empty()) return hint;
  if (const char *path = std::getenv("PATH")) {
    for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
      std::string cand = absl::StrCat(std::string(dir), "/nvcc");
      if (isExecutableFile(cand)) return cand;
    }
  }
  if (const char *home = std::getenv("CUDA_HOME")) {
    std::string cand = absl::StrCat(home, "/bin/nvcc");
    if (isExecutableFile(cand)) return cand;
  }
  if (isExecutableFile("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return "";
}

std::vector<std::string> nvccCommand(const std::string &nvcc, const std::string &arch,
                                     const std::string &source, const std::string &output) {
  return {nvcc,     "-O3",      "-std=c++17", absl::StrCat("-arch=", arch),
          "-shared", "-Xcompiler", "-fPIC",     "--cudart",
          "shared",  "-o",        output,       source};
}

std::string shellQuote(const std::vector<std::string> &argv) {
  std::string out;
  for (const std::string &a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty();
    for (char c : a)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./=+:,@%", c))) plain = false;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) {
      if (c == '\'')
        out += "'\\''";
      else
        out += c;
    }
    out += '\'';
  }
  return out;
}

absl::Status runCommand(const std::vector<std::string> &argv, const std::string &workDir,
                        std::string *output) {
  output->clear();
  if (argv.empty()) return absl::InvalidArgumentError("runCommand: empty command");
  int pipeFd[2];
  if (::pipe(pipeFd) != 0)
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  // An exec failure is reported through a close-on-exec pipe.
  int errFd[2];
  if (::pipe2(errFd, O_CLOEXEC) != 0) {
    ::close(pipeFd[0]);
    ::close(pipeFd[1]);
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::vector<char *> args;
  for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {pipeFd[0], pipeFd[1], errFd[0], errFd[1]}) ::close(fd);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls from here on.
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(pipeFd[1], 1);
    ::dup2(pipeFd[1], 2);
    ::close(pipeFd[0]);
    ::close(pipeFd[1]);
    ::close(errFd[0]);
    int e = 0;
    if (!workDir.empty() && ::chdir(workDir.c_str()) != 0) {
      e = errno;
    } else {
      ::execvp(args[0], args.data());
      e = errno;
    }
    ssize_t unused = ::write(errFd[1], &e, sizeof e);
    (void)unused;
    ::_exit(127);
  }
  ::close(pipeFd[1]);
  ::close(errFd[1]);
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(pipeFd[0], buf, sizeof buf);
    if (n > 0) {
      output->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(pipeFd[0]);
  int childErr = 0;
  ssize_t got;
  do {
    got = ::read(errFd[0], &childErr, sizeof childErr);
  } while (got < 0 && errno == EINTR);
  ::close(errFd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string cmd = shellQuote(argv);
  if (got == static_cast<ssize_t>(sizeof childErr))
    return absl::NotFoundError(
        absl::StrCat("cannot run '", cmd, "': ", std::strerror(childErr),
                     workDir.empty() ? "" : absl::StrCat(" (in '", workDir, "')")));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  if (WIFSIGNALED(status))
    return absl::InternalError(absl::StrCat("'", cmd, "' was killed by signal ", WTERMSIG(status)));
  return absl::InternalError(
      absl::StrCat("'", cmd, "' exited with status ", WEXITSTATUS(status)));
}

}  // namespace fusec::codegen
