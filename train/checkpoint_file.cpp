#include "train/checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <set>

#include "formats/file_bytes.h"

namespace tandem::train {

static_assert(std::endian::native == std::endian::little, "checkpoints are written in host (little-endian) order");

namespace {

constexpr char kMagic[8] = {'T', 'N', 'D', 'M', 'C', 'K', 'P', 'T'};
enum EntryKind : uint8_t { kTensor = 1, kInt = 2, kReal = 3, kText = 4 };
constexpr uint64_t kMaxCheckpointBytes = uint64_t(64) << 30;

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_name(std::string& out, EntryKind kind, const std::string& name) {
  put(out, uint8_t(kind));
  put(out, uint32_t(name.size()));
  out += name;
}

void put_tensor(std::string& out, const std::string& name, const Tensor& t) {
  check(t.layout() == Layout::plain && t.device().is_cpu(), "checkpoint tensor must be a plain host tensor",
        ErrorContext{{}, name, {}, t.desc().str()});
  put_name(out, kTensor, name);
  std::string dtype(dtype_name(t.dtype()));
  put(out, uint32_t(dtype.size()));
  out += dtype;
  put(out, uint32_t(t.rank()));
  for (int64_t d : t.shape()) put(out, d);
  out.append(static_cast<const char*>(t.raw()), t.bytes());
}

uint32_t crc_of(const char* data, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    uInt chunk = uInt(std::min<size_t>(n, size_t(1) << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    n -= chunk;
  }
  return uint32_t(crc);
}

// Bounds-checked cursor over the file's bytes; every failure names the file
// and the offset.
class Reader {
 public:
  Reader(const std::string& bytes, size_t end, const std::string& path) : bytes_(bytes), end_(end), path_(path) {}

  template <typename T>
  T pod(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof v, what), sizeof v);
    return v;
  }
  const char* take(uint64_t n, const char* what) {
    if (n > end_ - pos_) fail(std::string("truncated ") + what);
    const char* p = bytes_.data() + pos_;
    pos_ += size_t(n);
    return p;
  }
  std::string text(uint64_t n, const char* what) { return std::string(take(n, what), size_t(n)); }
  bool done() const { return pos_ == end_; }
  [[noreturn]] void fail(const std::string& message) const {
    throw Error("corrupt checkpoint: " + message + " at byte " + std::to_string(pos_), ErrorContext{path_, {}, {}, {}});
  }

 private:
  const std::string& bytes_;
  size_t end_, pos_ = 0;
  const std::string& path_;
};

Tensor read_tensor(Reader& in) {
  std::string dtype_text = in.text(in.pod<uint32_t>("dtype name length"), "dtype name");
  DType dtype;
  try {
    dtype = dtype_from_name(dtype_text);
  } catch (const Error&) {
    in.fail("unknown dtype '" + dtype_text + "'");
  }
  uint32_t rank = in.pod<uint32_t>("rank");
  if (rank > 16) in.fail("tensor rank " + std::to_string(rank));
  Shape shape;
  for (uint32_t i = 0; i < rank; ++i) shape.push_back(in.pod<int64_t>("extent"));
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && count > kMaxCheckpointBytes / uint64_t(d))) in.fail("bad tensor shape " + shape_str(shape));
    count *= uint64_t(d);
  }
  const char* data = in.take(count * dtype_size(dtype), "tensor data");
  Tensor t = Tensor::empty(dtype, shape);
  if (t.bytes()) std::memcpy(t.raw(), data, t.bytes());
  return t;
}

void read_entry(Reader& in, CheckpointData& out, std::set<std::string>& names) {
  auto kind = in.pod<uint8_t>("entry kind");
  std::string name = in.text(in.pod<uint32_t>("name length"), "name");
  if (!names.insert(name).second) in.fail("duplicate entry '" + name + "'");
  switch (kind) {
    case kTensor: out.tensors.emplace_back(name, read_tensor(in)); break;
    case kInt: out.ints[name] = in.pod<int64_t>("integer"); break;
    case kReal: out.reals[name] = in.pod<double>("real"); break;
    case kText: out.texts[name] = in.text(in.pod<uint64_t>("text length"), "text"); break;
    default: in.fail("unknown entry kind " + std::to_string(kind) + " for '" + name + "'");
  }
}

// Makes the rename that replaced `path` survive a power loss.
void sync_folder_of(const std::string& path) {
  std::string folder = std::filesystem::path(path).parent_path().string();
  int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  check(fd >= 0, "cannot open the folder of the checkpoint to sync it", ErrorContext{path, {}, {}, {}});
  int rc = ::fsync(fd);
  ::close(fd);
  check(rc == 0, "cannot sync the folder of the checkpoint", ErrorContext{path, {}, {}, {}});
}

}  // namespace

std::string encode_checkpoint(const CheckpointData& data) {
  std::string out(kMagic, sizeof kMagic);
  put(out, kCheckpointVersion);
  put(out, uint32_t(data.tensors.size() + data.ints.size() + data.reals.size() + data.texts.size()));
  for (const auto& [name, t] : data.tensors) put_tensor(out, name, t);
  for (const auto& [name, v] : data.ints) {
    put_name(out, kInt, name);
    put(out, v);
  }
  for (const auto& [name, v] : data.reals) {
    put_name(out, kReal, name);
    put(out, v);
  }
  for (const auto& [name, v] : data.texts) {
    put_name(out, kText, name);
    put(out, uint64_t(v.size()));
    out += v;
  }
  put(out, crc_of(out.data(), out.size()));
  return out;
}

CheckpointData decode_checkpoint(const std::string& bytes, const std::string& path) {
  ErrorContext ctx{path, {}, {}, {}};
  check(bytes.size() >= sizeof kMagic + 12 && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0,
        "not a tandem checkpoint (bad magic)", ctx);
  size_t end = bytes.size() - 4;
  uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + end, 4);
  check(stored_crc == crc_of(bytes.data(), end), "corrupt checkpoint: checksum mismatch", ctx);
  Reader in(bytes, end, path);
  in.take(sizeof kMagic, "magic");
  uint32_t version = in.pod<uint32_t>("version");
  check_supported(version == kCheckpointVersion, "checkpoint format version " + std::to_string(version) +
                                                     ", this build reads version " + std::to_string(kCheckpointVersion), ctx);
  uint32_t count = in.pod<uint32_t>("entry count");
  CheckpointData out;
  std::set<std::string> names;
  for (uint32_t i = 0; i < count; ++i) read_entry(in, out, names);
  if (!in.done()) in.fail("data after the last entry");
  return out;
}

void write_checkpoint_file(const std::string& path, const CheckpointData& data) {
  write_file_atomically(path, encode_checkpoint(data));
  sync_folder_of(path);
}

CheckpointData read_checkpoint_file(const std::string& path) {
  return decode_checkpoint(read_file_bytes(path, kMaxCheckpointBytes), path);
}

}  // namespace tandem::train
