#pragma once
// The checkpoint container: named tensors, integers, reals and texts in one
// versioned little-endian binary file, its own format because none of the
// Debian-packaged ones fits (a .npz or TensorProto list would need a second
// file or an archive library for the scalars, and has no checksum):
//
//   "TNDMCKPT"  u32 version  u32 entry count
//   entry:      u8 kind  u32 name length  name  payload
//     tensor (1): u32 dtype-name length  dtype name  u32 rank  rank x i64  data
//     int64  (2): i64     real (3): f64     text (4): u64 length  bytes
//   u32 CRC-32 (zlib) of everything before it
//
// The CRC makes a torn or bit-rotted file an error, never wrong weights.
// Writing is atomic (temp file, fsync, rename, fsync of the folder).
#include <cstdint>
#include <map>
#include <string>

#include "train/named_tensors.h"

namespace tandem::train {

constexpr uint32_t kCheckpointVersion = 1;

struct CheckpointData {
  NamedTensors tensors;  // host, plain layout
  std::map<std::string, int64_t> ints;
  std::map<std::string, double> reals;
  std::map<std::string, std::string> texts;
};

std::string encode_checkpoint(const CheckpointData& data);
// `path` names the file in errors: bad magic, a newer version, a checksum
// mismatch, a truncated entry, a duplicate name.
CheckpointData decode_checkpoint(const std::string& bytes, const std::string& path);

// encode_checkpoint written so that `path` is always either the old file or
// the whole new one, even if the process is killed or the machine loses power.
void write_checkpoint_file(const std::string& path, const CheckpointData& data);
CheckpointData read_checkpoint_file(const std::string& path);

}  // namespace tandem::train
