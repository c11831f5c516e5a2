#pragma once
// Decoded photos kept in device memory after their decode, so that parts of
// them can be read back at full resolution later without decoding the file
// again: `tandem tag` cuts its face crops from them once the face detector
// has found the faces, a second or so after the JPEG engines decoded the
// photo. On the CPU a face region's decode cost 54 ms a photo, a good part
// of a whole decode, because libjpeg entropy-decodes every row above it.
//
// The images live in one ring of device memory: a new image takes the
// space after the last one and evicts whatever it overlaps, oldest first.
// A read of an evicted image fails and the caller decodes the region
// itself; memory use is fixed and no free or allocation happens per photo
// (cudaFree synchronises the device).
//
// Thread-safety: place() and add() belong to the decoder's thread; read()
// may be called from any thread at the same time, each copying on its own
// thread's stream into its own pinned buffer.
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "cuda/device_buffer.h"

namespace tandem::cuda {

class KeptImages {
 public:
  // Up to `capacity` bytes on GPU `device`, allocated at the first place().
  KeptImages(int device, size_t capacity);
  ~KeptImages();
  KeptImages(const KeptImages&) = delete;
  KeptImages& operator=(const KeptImages&) = delete;

  // Room for an image of `bytes` (decoder thread): a device pointer, 256-byte
  // aligned, whose previous contents are no longer readable; nothing when
  // the image is larger than the ring, when the ring cannot be allocated
  // (keeping then stops for good), or when the room would overlap one
  // placed since the last begin_group() (the group being decoded).
  std::optional<uint8_t*> place(size_t bytes);

  // Makes an image placed at `data` readable once its decode has completed
  // (decoder thread, after synchronising its stream). `pitch`: bytes a row
  // of 3-byte pixels; width x height as stored; orientation 1..8 turns it
  // upright; gray: channel 0 holds the value. Returns its ticket (never 0).
  uint64_t add(const uint8_t* data, size_t pitch, int width, int height, int orientation,
               bool gray);
  // Starts a group (decoder thread): the placements before it no longer
  // bound the next ones, whose decodes follow theirs on the stream.
  void begin_group() { group_.clear(); }

  // The upright rectangle (x, y, w, h) of image `ticket`, clipped to the
  // upright image, as 8-bit RGB rows (3 * width bytes each) in `out`;
  // *clipped receives the rectangle read. With `shrink` 2, 4 or 8 the
  // clipped rectangle's sides are first cut to multiples of it and each
  // shrink x shrink block averaged on the device, so that only the smaller
  // image crosses to the host. False when the image was evicted or the
  // rectangle keeps less than one block of it. Any thread.
  struct Rect {
    int x = 0, y = 0, width = 0, height = 0;
  };
  bool read(uint64_t ticket, Rect upright, std::vector<uint8_t>& out, Rect* clipped,
            int shrink = 1);
  // The same into rows the caller provides: `rows(width, height)` returns
  // room for the width x height RGB image read.
  using Rows = std::function<uint8_t*(int width, int height)>;
  bool read(uint64_t ticket, Rect upright, int shrink, const Rows& rows, Rect* clipped);

 private:
  struct Entry {
    size_t offset = 0, bytes = 0, pitch = 0;
    int width = 0, height = 0, orientation = 1;
    bool gray = false;
  };
  // Drops entries overlapping [begin, end) (under mutex_).
  void evict(size_t begin, size_t end);
  // Whether a read in flight copies from [begin, end) (under mutex_).
  bool being_read(size_t begin, size_t end) const;

  const int device_;
  const size_t capacity_;
  bool enabled_ = true;
  DeviceBuffer ring_;
  size_t head_ = 0;                               // where the next image goes
  std::vector<std::pair<size_t, size_t>> group_;  // [begin, end) placed in the current group
  // Guards entries_ and reading_. Reads copy without it, many at once (one
  // lock around the copies made 16 threads queue: 8.9 ms a face read on an
  // H100 host); a placement waits only for the reads of the bytes it takes.
  std::mutex mutex_;
  std::condition_variable read_done_;
  std::map<uint64_t, Entry> entries_;
  std::vector<std::pair<size_t, size_t>> reading_;  // [begin, end) of the reads in flight
  uint64_t next_ticket_ = 1;
};

}  // namespace tandem::cuda
