#include "image/jpeg_scans.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "image/jpeg_markers.h"

namespace tandem::image {

namespace {

constexpr size_t kNone = ~size_t(0);
constexpr uint8_t kSoi = 0xD8, kEoi = 0xD9, kSos = 0xDA, kSof2 = 0xC2;

bool is_rst(uint8_t m) { return m >= 0xD0 && m <= 0xD7; }

// A start-of-frame marker (C0-CF but DHT C4, JPG C8 and DAC CC).
bool is_sof(uint8_t m) { return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC; }

// Where the entropy-coded data starting at `pos` ends: the 0xFF that begins
// the next marker. Inside the data 0xFF is followed by a stuffed 0x00 or is
// a restart marker (D0-D7); fill bytes (0xFF 0xFF) precede a marker. kNone:
// the file ends first.
size_t entropy_end(std::span<const uint8_t> b, size_t pos) {
  while (pos < b.size()) {
    const void* ff = std::memchr(b.data() + pos, 0xFF, b.size() - pos);
    if (!ff) return kNone;
    pos = size_t(static_cast<const uint8_t*>(ff) - b.data());
    if (pos + 1 >= b.size()) return kNone;
    const uint8_t next = b[pos + 1];
    if (next != 0x00 && !is_rst(next)) return pos;
    pos += 2;
  }
  return kNone;
}

// What a cut keeps of each component (by id), from the frame header.
struct Components {
  std::array<bool, 256> needs_ac{};     // a 1/8 decode reads its AC coefficients
  std::array<bool, 256> full_size{};    // not subsampled: luma (or gray, or CMYK's Y and K)
};

// Reads a frame header (P, Y, X, Nf, then Nf times id, HiVi, Tq). libjpeg
// (jdmaster.c) gives a subsampled component a larger IDCT instead of
// upsampling it: with factors h, v of maxima H, V its 1/8-scale IDCT grows
// from 1x1 to 2x2 while H % 2h == 0 and V % 2v == 0 (4:2:0 chroma does,
// 4:2:2 does not), and the 2x2 IDCT reads coefficients up to (7, 7).
bool read_frame(std::span<const uint8_t> f, Components& c) {
  if (f.size() < 6) return false;
  const size_t n = f[5];
  if (n == 0 || f.size() != 6 + 3 * n) return false;
  int max_h = 1, max_v = 1;
  for (size_t k = 0; k < n; ++k) {
    max_h = std::max(max_h, f[6 + 3 * k + 1] >> 4);
    max_v = std::max(max_v, f[6 + 3 * k + 1] & 15);
  }
  for (size_t k = 0; k < n; ++k) {
    const int h = f[6 + 3 * k + 1] >> 4, v = f[6 + 3 * k + 1] & 15;
    if (h == 0 || v == 0) return false;
    c.needs_ac[f[6 + 3 * k]] = max_h % (2 * h) == 0 && max_v % (2 * v) == 0;
    c.full_size[f[6 + 3 * k]] = h == max_h && v == max_v;
  }
  return true;
}

void append(std::vector<uint8_t>& out, std::span<const uint8_t> b, size_t from, size_t to) {
  out.insert(out.end(), b.begin() + std::ptrdiff_t(from), b.begin() + std::ptrdiff_t(to));
}

// Whether `cut` keeps the scan whose header (after the length) is `sos`:
// Ns, Ns (selector, tables) pairs, Ss, Se, Ah/Al.
bool keeps(std::span<const uint8_t> sos, const Components& c, ScanCut cut) {
  const size_t n = sos[0];
  const uint8_t spectral_start = sos[1 + 2 * n], high_bit = sos[3 + 2 * n] >> 4;
  if (spectral_start == 0) return true;  // DC: every scale reads it
  for (size_t k = 0; k < n; ++k) {
    const uint8_t id = sos[1 + 2 * k];
    const bool drop = cut == ScanCut::eighth ? !c.needs_ac[id] : c.full_size[id] && high_bit > 0;
    if (!drop) return true;
  }
  return false;
}

}  // namespace

std::optional<ScanCut> scan_cut(int num, int denom, bool skip_unread, bool coarse) {
  if (num == 1 && denom == 8 && skip_unread) return ScanCut::eighth;
  if (coarse) return ScanCut::luma_coarse;
  return std::nullopt;
}

bool copy_scans(std::span<const uint8_t> b, std::vector<uint8_t>& out, ScanCut cut,
                int max_scans) {
  out.clear();
  if (b.size() < 4 || b[0] != 0xFF || b[1] != kSoi) return false;
  out.push_back(0xFF), out.push_back(kSoi);
  bool progressive = false;
  Components components;
  int scans = 0, dropped = 0;
  size_t pos = 2;
  while (pos < b.size()) {
    // A marker: 0xFF, any fill bytes, the code. Anything else here is
    // garbage libjpeg would warn about: leave the file to it.
    if (b[pos] != 0xFF) return false;
    const size_t start = pos;
    while (pos < b.size() && b[pos] == 0xFF) ++pos;
    if (pos >= b.size()) return false;
    const uint8_t marker = b[pos++];
    if (marker == kEoi) {
      out.push_back(0xFF), out.push_back(kEoi);
      return progressive && dropped > 0;
    }
    if (marker == 0x00 || marker == 0x01 || is_rst(marker) || marker == kSoi) return false;
    if (pos + 2 > b.size()) return false;
    const size_t length = size_t(b[pos]) << 8 | b[pos + 1];
    if (length < 2 || pos + length > b.size()) return false;
    const size_t segment_end = pos + length;
    if (is_sof(marker)) {
      if (marker != kSof2 || progressive)
        return false;  // baseline, lossless, arithmetic: not this path's
      if (!read_frame(b.subspan(pos + 2, length - 2), components)) return false;
      progressive = true;
    }
    if (marker != kSos) {
      append(out, b, start, segment_end);
      pos = segment_end;
      continue;
    }
    // SOS: Ns, Ns component selectors, Ss, Se, Ah/Al.
    if (!progressive || length < 6) return false;
    if (length != 6 + 2 * size_t(b[pos + 2])) return false;
    const bool keep = keeps(b.subspan(pos + 2, length - 2), components, cut);
    const size_t end = entropy_end(b, segment_end);
    if (end == kNone) return false;  // truncated: the decoder says so
    if (++scans > max_scans) return false;
    if (keep) append(out, b, start, end);
    dropped += !keep;
    pos = end;
  }
  return false;  // no EOI
}

bool is_sequential_huffman_jpeg(std::span<const uint8_t> b) {
  uint8_t frame = 0;
  const bool found = walk_jpeg_headers(b, [&](uint8_t marker, std::span<const uint8_t>) {
    // A standalone marker before the frame: no file any engine takes.
    if (is_standalone_jpeg_marker(marker)) return true;
    if (is_sof(marker)) frame = marker;
    return frame != 0;
  });
  return found && (frame == 0xC0 || frame == 0xC1);
}

}  // namespace tandem::image
