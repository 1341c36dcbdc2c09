//===- OnnxTensor.cpp - onnx.TensorProto to ir::Tensor --------------------===//
//
// Data layout rules follow onnx.proto (TensorProto): raw_data holds the
// elements little-endian; otherwise float_data holds FLOAT, double_data
// DOUBLE, int64_data INT64, uint64_data UINT32/UINT64, string_data STRING,
// and int32_data holds INT32/INT16/INT8/UINT16/UINT8/BOOL and the bit
// patterns of FLOAT16/BFLOAT16 and the float8 types (one element per int32).
// The 4-bit types (INT4/UINT4/FLOAT4E2M1) are packed two per byte and the
// 2-bit types (INT2/UINT2) four per byte, first element in the lowest bits,
// in raw_data and external data (ceil(n * bits / 8) bytes) and in int32_data
// (one packed byte per int32). ir::Tensor holds them one element per byte
// (ir/DType.h). External data (data_location = EXTERNAL) uses the keys
// location, offset and length.
//
//===----------------------------------------------------------------------===//
#include "frontend/onnx/internal/OnnxTensor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/Escape.h"
#include "support/Status.h"

namespace fusec::frontend::internal {

namespace fs = std::filesystem;
using ir::DType;

namespace {
/// "'text'" made safe to print: paths and names come from the model.
std::string q(const std::string &text) { return absl::StrCat("'", printable(text), "'"); }
}  // namespace

absl::Status unsupportedDType(int32_t code, const std::string &what) {
  std::string msg = absl::StrCat(what, what.empty() ? "unsupported dtype " : " has unsupported dtype ",
                                 onnxDTypeName(code));
  // A dtype ONNX defines but fusec lacks is "not supported" (Unimplemented);
  // a code ONNX does not define is a malformed model (InvalidArgument).
  bool known = onnxDTypeName(code).rfind("code ", 0) != 0 && code != 0;
  return known ? absl::UnimplementedError(msg) : absl::InvalidArgumentError(msg);
}

std::string onnxDTypeName(int32_t code) {
  // TensorProto.DataType, including codes newer than Debian's onnx.proto.
  static const char *const kNames[] = {
      "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32",
      "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64",
      "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ",
      "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
      "FLOAT8E8M0", "UINT2", "INT2", "FLOAT6E2M3", "FLOAT6E3M2"};
  constexpr int32_t kCount = static_cast<int32_t>(sizeof(kNames) / sizeof(kNames[0]));
  if (code >= 0 && code < kCount) return kNames[code];
  return absl::StrCat("code ", code);
}

absl::StatusOr<std::string> readFileBytes(const std::string &path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return absl::NotFoundError(absl::StrCat("no such file: ", q(path)));
  if (!fs::is_regular_file(st))
    return absl::InvalidArgumentError(absl::StrCat(q(path), " is not a regular file"));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return absl::InvalidArgumentError(absl::StrCat("cannot open ", q(path), ": ", std::strerror(errno)));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", q(path), ": ", std::strerror(errno)));
  // A protobuf message (a ModelProto, a TensorProto of test data) cannot be
  // larger than 2 GiB; weights that big live in external data.
  constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 31;
  if (static_cast<uint64_t>(info.st_size) > kMaxMessageBytes)
    return absl::InvalidArgumentError(absl::StrCat(
        q(path), " has ", static_cast<uint64_t>(info.st_size), " bytes, more than protobuf's 2 GiB limit for one "
        "message (ONNX keeps larger weights in external data files)"));
  std::string bytes;
  try {
    bytes.reserve(static_cast<size_t>(info.st_size));
    char buf[1 << 16];
    for (;;) {
      const ssize_t got = ::read(fd, buf, sizeof buf);
      if (got < 0) {
        if (errno == EINTR) continue;
        return absl::InvalidArgumentError(absl::StrCat("cannot read ", q(path), ": ", std::strerror(errno)));
      }
      if (got == 0) break;
      if (bytes.size() + static_cast<size_t>(got) > kMaxMessageBytes)
        return absl::InvalidArgumentError(
            absl::StrCat(q(path), " is larger than protobuf's 2 GiB limit for one message"));
      bytes.append(buf, static_cast<size_t>(got));
    }
  } catch (const std::bad_alloc &) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory reading ", q(path), " (", static_cast<uint64_t>(info.st_size), " bytes)"));
  }
  return bytes;
}

absl::StatusOr<std::string> resolveExternalPath(const std::string &baseDir,
                                                const std::string &location) {
  if (location.empty())
    return absl::InvalidArgumentError("external data has an empty location");
  fs::path loc(location);
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory())
    return absl::InvalidArgumentError(absl::StrCat(
        "external data location ", q(location),
        " is an absolute path; it must be relative to the model's folder"));
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(baseDir.empty() ? fs::path(".") : fs::path(baseDir), ec);
  if (ec)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve model folder ", q(baseDir), ": ", ec.message()));
  // weakly_canonical resolves `..` and every symlink along the existing part
  // of the path, so the prefix test below cannot be fooled by either.
  fs::path resolved = fs::weakly_canonical(dir / loc, ec);
  if (ec)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve external data location ", q(location), ": ", ec.message()));
  auto d = dir.begin(), r = resolved.begin();
  for (; d != dir.end() && r != resolved.end(); ++d, ++r)
    if (*d != *r) break;
  // A trailing empty component (dir ending in '/') matches anything.
  bool dirExhausted = d == dir.end() || (std::next(d) == dir.end() && d->empty());
  if (!dirExhausted || r == resolved.end())
    return absl::InvalidArgumentError(absl::StrCat(
        "external data location ", q(location), " resolves to ", q(resolved.string()),
        ", outside the model's folder ", q(dir.string())));
  fs::file_status st = fs::status(resolved, ec);
  if (ec || !fs::exists(st))
    return absl::NotFoundError(absl::StrCat("external data file ", q(location),
                                            " not found (looked for ", q(resolved.string()), ")"));
  if (!fs::is_regular_file(st))
    return absl::InvalidArgumentError(
        absl::StrCat("external data location ", q(location), " is not a regular file"));
  return resolved.string();
}

namespace {

/// Closes a POSIX file descriptor on scope exit.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string shapeStr(const ir::Shape &s) { return absl::StrCat("[", absl::StrJoin(s, ","), "]"); }

/// Reads the bytes named by \p proto's external_data entries: exactly
/// \p want bytes (the tensor's size), checked before anything is allocated,
/// so a huge or sparse file (or a huge `length`) costs nothing.
absl::StatusOr<std::string> readExternalData(const onnx::TensorProto &proto,
                                             const std::string &baseDir, int64_t want,
                                             const std::string &tensorDesc) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : proto.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      int64_t v = 0;
      if (!absl::SimpleAtoi(kv.value(), &v) || v < 0)
        return absl::InvalidArgumentError(
            absl::StrCat("external data ", kv.key(), " ", q(kv.value()), " is not a valid size"));
      (kv.key() == "offset" ? offset : length) = v;
    }
    // "checksum" and unknown keys are ignored.
  }
  // The file system would stop at a NUL: the file read would not be the
  // one the location names.
  if (location.find('\0') != std::string::npos)
    return absl::InvalidArgumentError(
        absl::StrCat("external data location ", q(location), " contains a NUL byte"));
  FUSEC_ASSIGN_OR_RETURN(std::string path, resolveExternalPath(baseDir, location));
  // The checks above are by name. A hard link inside the folder can still
  // name a file outside it, and the path can be swapped for a link between
  // the check and the open; so the file that is opened is checked itself:
  // it must be the regular file the path resolved to (same device and
  // inode, not followed through a final symlink) and have a single link.
  struct stat byPath {};
  if (::lstat(path.c_str(), &byPath) != 0 || !S_ISREG(byPath.st_mode))
    return absl::InvalidArgumentError(absl::StrCat("cannot stat ", q(path)));
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) return absl::InvalidArgumentError(absl::StrCat("cannot open ", q(path)));
  struct stat opened {};
  if (::fstat(fd.get(), &opened) != 0 || !S_ISREG(opened.st_mode) ||
      opened.st_dev != byPath.st_dev || opened.st_ino != byPath.st_ino)
    return absl::InvalidArgumentError(absl::StrCat(
        "external data file ", q(location), " changed while it was being opened"));
  if (opened.st_nlink > 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "external data file ", q(location), " has ", static_cast<uint64_t>(opened.st_nlink),
        " hard links; fusec reads only files with one link (a hard link can name a file "
        "outside the model's folder)"));
  uint64_t size = static_cast<uint64_t>(opened.st_size);
  if (static_cast<uint64_t>(offset) > size)
    return absl::InvalidArgumentError(absl::StrCat("external data offset ", offset,
                                                   " is beyond the end of ", q(location),
                                                   " (", size, " bytes)"));
  if (length < 0) length = static_cast<int64_t>(size - static_cast<uint64_t>(offset));
  if (static_cast<uint64_t>(length) > size - static_cast<uint64_t>(offset))
    return absl::InvalidArgumentError(absl::StrCat(
        "external data offset ", offset, " + length ", length, " is beyond the end of ",
        q(location), " (", size, " bytes)"));
  if (length != want)
    return absl::InvalidArgumentError(absl::StrCat("external data has ", length, " bytes, but ",
                                                   tensorDesc, " needs ", want));
  std::string bytes(static_cast<size_t>(length), '\0');
  int64_t done = 0;
  while (done < length) {
    ssize_t got = ::pread(fd.get(), bytes.data() + done, static_cast<size_t>(length - done),
                          static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return absl::InvalidArgumentError(absl::StrCat("error reading ", q(path)));
    done += got;
  }
  return bytes;
}

/// Checks that a typed field holds \p have elements where \p want are needed.
absl::Status checkCount(const char *field, int64_t have, int64_t want, const ir::Shape &shape,
                        DType dt) {
  if (have == want) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, " has ", have, " elements, but shape ",
                                                 shapeStr(shape), " of ", ir::dtypeName(dt),
                                                 " needs ", want));
}

/// The bytes ONNX serialises \p n elements of \p dt in (the narrow integer
/// and float4 types are packed).
int64_t serializedBytes(DType dt, int64_t n) {
  const int64_t bits = ir::dtypeBits(dt);
  return bits >= 8 ? n * (bits / 8) : (n * bits + 7) / 8;
}

/// Unpacks \p t's packed elements from \p packed (one byte per packed
/// byte): element k sits at bit (k * bits) % 8 of byte k * bits / 8; i4 / i2
/// are sign-extended.
template <typename ByteAt>
void unpackSubByte(ir::Tensor &t, const ByteAt &packed) {
  const int64_t bits = ir::dtypeBits(t.dtype());
  const bool sign = t.dtype() == DType::kI4 || t.dtype() == DType::kI2;
  const unsigned mask = (1u << bits) - 1;
  uint8_t *out = t.data();
  for (int64_t k = 0; k < t.numElements(); ++k) {
    const unsigned byte = static_cast<uint8_t>(packed(k * bits / 8));
    unsigned v = (byte >> ((k * bits) % 8)) & mask;
    if (sign && (v >> (bits - 1))) v |= ~mask;  // sign-extend
    out[k] = static_cast<uint8_t>(v);
  }
}

template <typename T, typename Src>
void storeAll(ir::Tensor &t, const Src &src) {
  uint8_t *out = t.data();
  int64_t i = 0;
  for (const auto &v : src) {
    T x = static_cast<T>(v);
    std::memcpy(out + i * sizeof(T), &x, sizeof(T));
    ++i;
  }
}

absl::StatusOr<ir::Tensor> convert(const onnx::TensorProto &proto, const std::string &baseDir) {
  std::optional<DType> dtOpt = ir::dtypeFromOnnx(proto.data_type());
  if (!dtOpt) return unsupportedDType(proto.data_type(), "");
  DType dt = *dtOpt;
  ir::Shape shape;
  int64_t n = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("negative dimension ", d));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / 16 / d)
      return absl::InvalidArgumentError("tensor is too large");
    n *= d;
    shape.push_back(d);
  }
  if (proto.has_segment())
    return absl::InvalidArgumentError("segmented tensors are not supported");

  const bool external = proto.data_location() == onnx::TensorProto::EXTERNAL;
  if (external || proto.has_raw_data()) {
    if (dt == DType::kString)
      return absl::InvalidArgumentError("string tensors cannot use raw or external data");
    const int64_t want = serializedBytes(dt, n);
    std::string externalBytes;
    if (external) {
      FUSEC_ASSIGN_OR_RETURN(externalBytes,
                             readExternalData(proto, baseDir, want,
                                              absl::StrCat("shape ", shapeStr(shape), " of ",
                                                           ir::dtypeName(dt))));
    }
    const std::string &raw = external ? externalBytes : proto.raw_data();
    if (static_cast<int64_t>(raw.size()) != want)
      return absl::InvalidArgumentError(absl::StrCat(
          external ? "external data" : "raw_data", " has ", raw.size(), " bytes, but shape ",
          shapeStr(shape), " of ", ir::dtypeName(dt), " needs ", want));
    ir::Tensor t(dt, shape);
    if (ir::dtypeBits(dt) < 8)
      unpackSubByte(t, [&](int64_t b) { return raw[static_cast<size_t>(b)]; });
    else if (want > 0)
      std::memcpy(t.data(), raw.data(), static_cast<size_t>(want));
    return t;
  }

  switch (dt) {
    case DType::kF32: {
      FUSEC_RETURN_IF_ERROR(checkCount("float_data", proto.float_data_size(), n, shape, dt));
      ir::Tensor t(dt, shape);
      storeAll<float>(t, proto.float_data());
      return t;
    }
    case DType::kF64: {
      FUSEC_RETURN_IF_ERROR(checkCount("double_data", proto.double_data_size(), n, shape, dt));
      ir::Tensor t(dt, shape);
      storeAll<double>(t, proto.double_data());
      return t;
    }
    case DType::kI64: {
      FUSEC_RETURN_IF_ERROR(checkCount("int64_data", proto.int64_data_size(), n, shape, dt));
      ir::Tensor t(dt, shape);
      storeAll<int64_t>(t, proto.int64_data());
      return t;
    }
    case DType::kU32:
    case DType::kU64: {
      FUSEC_RETURN_IF_ERROR(checkCount("uint64_data", proto.uint64_data_size(), n, shape, dt));
      ir::Tensor t(dt, shape);
      if (dt == DType::kU32)
        storeAll<uint32_t>(t, proto.uint64_data());
      else
        storeAll<uint64_t>(t, proto.uint64_data());
      return t;
    }
    case DType::kI32:
    case DType::kI16:
    case DType::kI8:
    case DType::kU16:
    case DType::kU8:
    case DType::kBool:
    case DType::kF16:
    case DType::kBF16: {
      FUSEC_RETURN_IF_ERROR(checkCount("int32_data", proto.int32_data_size(), n, shape, dt));
      ir::Tensor t(dt, shape);
      switch (dt) {
        case DType::kI32: storeAll<int32_t>(t, proto.int32_data()); break;
        case DType::kI16: storeAll<int16_t>(t, proto.int32_data()); break;
        case DType::kI8: storeAll<int8_t>(t, proto.int32_data()); break;
        case DType::kU16: storeAll<uint16_t>(t, proto.int32_data()); break;
        case DType::kU8: storeAll<uint8_t>(t, proto.int32_data()); break;
        case DType::kBool: {
          int64_t i = 0;
          for (int32_t v : proto.int32_data()) t.data()[i++] = v != 0 ? 1 : 0;
          break;
        }
        default:  // f16 / bf16: the value is the 16-bit pattern.
          for (int64_t i = 0; i < proto.int32_data_size(); ++i)
            if (proto.int32_data(i) < 0 || proto.int32_data(i) > 0xFFFF)
              return absl::InvalidArgumentError(absl::StrCat(
                  "int32_data element ", i, " = ", proto.int32_data(i), " is outside 0..65535, ",
                  "the bit patterns of ", ir::dtypeName(dt)));
          storeAll<uint16_t>(t, proto.int32_data());
          break;
      }
      return t;
    }
    case DType::kF8E4M3FN:
    case DType::kF8E4M3FNUZ:
    case DType::kF8E5M2:
    case DType::kF8E5M2FNUZ:
    case DType::kF8E8M0: {  // one code per int32, in its low 8 bits
      FUSEC_RETURN_IF_ERROR(checkCount("int32_data", proto.int32_data_size(), n, shape, dt));
      ir::Tensor t(dt, shape);
      storeAll<uint8_t>(t, proto.int32_data());
      return t;
    }
    case DType::kI4:
    case DType::kU4:
    case DType::kF4E2M1:
    case DType::kI2:
    case DType::kU2: {  // one packed byte per int32
      FUSEC_RETURN_IF_ERROR(checkCount("int32_data (packed bytes)", proto.int32_data_size(),
                                       serializedBytes(dt, n), shape, dt));
      ir::Tensor t(dt, shape);
      unpackSubByte(t, [&](int64_t b) { return proto.int32_data(static_cast<int>(b)); });
      return t;
    }
    case DType::kString: {
      FUSEC_RETURN_IF_ERROR(checkCount("string_data", proto.string_data_size(), n, shape, dt));
      ir::Tensor t(dt, shape);
      t.strings().assign(proto.string_data().begin(), proto.string_data().end());
      return t;
    }
    case DType::kUndefined:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported dtype ", onnxDTypeName(proto.data_type())));
}

}  // namespace

absl::StatusOr<ir::Tensor> tensorFromProto(const onnx::TensorProto &proto,
                                           const std::string &baseDir) {
  absl::StatusOr<ir::Tensor> t = convert(proto, baseDir);
  if (!t.ok()) return withContext(t.status(), absl::StrCat("tensor ", q(proto.name())));
  return t;
}

}  // namespace fusec::frontend::internal
