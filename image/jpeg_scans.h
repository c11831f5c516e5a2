#pragma once
// The scans of a progressive JPEG that a 1/8-scale decode reads.
//
// At 1/8 scale libjpeg's IDCT turns each 8x8 block of the full-resolution
// component (luma) into one pixel from its DC coefficient alone. A baseline
// file interleaves DC and AC in one scan, so every AC coefficient must still
// be Huffman-decoded to reach the next DC; a progressive file sends DC in
// scans of its own (Ss = 0) and each component's AC in others. Dropping the
// AC scans of the components that need only DC (luma: most of the bytes and
// of the Huffman work) leaves a valid progressive JPEG whose 1/8 decode is
// the original's, pixel for pixel (with block smoothing off: see
// jpeg_eighth_decoder.h). 4:2:0 chroma keeps its AC scans: libjpeg scales it with
// a 2x2 IDCT rather than upsampling it.
#include <cstdint>
#include <span>
#include <vector>

namespace tandem::image {

// Writes to `out` (reusing its capacity) `jpeg` without the AC scans a 1/8
// decode does not read: every other marker segment, in order, from SOI to
// EOI. False, `out` unspecified, unless the file is a well-formed
// progressive Huffman JPEG (SOF2) ending in EOI with at most `max_scans`
// scans, some of which could be dropped: the caller then decodes the
// original, whose decoder reports what is wrong with it.
bool copy_scans_for_eighth(std::span<const uint8_t> jpeg, std::vector<uint8_t>& out,
                           int max_scans = 500);

}  // namespace tandem::image
