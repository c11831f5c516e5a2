#pragma once
// The scans of a progressive JPEG that a DCT-scaled decode needs.
//
// At 1/8 scale libjpeg's IDCT turns each 8x8 block of the full-resolution
// component (luma) into one pixel from its DC coefficient alone. A baseline
// file interleaves DC and AC in one scan, so every AC coefficient must still
// be Huffman-decoded to reach the next DC; a progressive file sends DC in
// scans of its own (Ss = 0) and each component's AC in others. Dropping the
// AC scans of the components that need only DC (luma: most of the bytes and
// of the Huffman work) leaves a valid progressive JPEG whose 1/8 decode is
// the original's, pixel for pixel (with block smoothing off: see
// jpeg_scan_decoder.h). 4:2:0 chroma keeps its AC scans: libjpeg scales it with
// a 2x2 IDCT rather than upsampling it.
//
// At 1/4 scale libjpeg's 2x2 IDCT reads luma coefficients up to (7, 7), so
// no scan can be dropped without changing pixels. What can go are luma's AC
// refinement scans (successive approximation, Ah > 0): the last one or two
// bits of each AC coefficient, which in a photo with sensor noise are most
// of the file's bytes and of its Huffman work (a 12-MP phone photo: 2.0 of
// 2.5 MB; decode time down 2-3x). The pixels then differ from a decode of
// every scan by what the detector's 512x512 input barely sees (about 53 dB
// PSNR there); bench/detector_dct_scale measures whether its findings stay
// the same. An approximation, so only on request.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace tandem::image {

enum class ScanCut {
  eighth,         // the AC scans a 1/8 decode does not read: same pixels
  luma_coarse,    // luma's AC refinement scans: approximate pixels
};

// Which scans a progressive file decoded at scale `num`/`denom` may skip:
// at 1/8, with `skip_unread`, those the scale never reads (the same
// pixels); otherwise, with `coarse`, luma's refinement scans (approximate
// pixels). None when neither applies.
std::optional<ScanCut> scan_cut(int num, int denom, bool skip_unread, bool coarse);

// Writes to `out` (reusing its capacity) `jpeg` without the scans `cut`
// names: every other marker segment, in order, from SOI to EOI. False, `out`
// unspecified, unless the file is a well-formed progressive Huffman JPEG
// (SOF2) ending in EOI with at most `max_scans` scans, some of which could
// be dropped: the caller then decodes the original, whose decoder reports
// what is wrong with it.
bool copy_scans(std::span<const uint8_t> jpeg, std::vector<uint8_t>& out, ScanCut cut,
                int max_scans = 500);

// Whether `jpeg`'s frame, the first start-of-frame marker after SOI, is a
// sequential Huffman one (SOF0 baseline or SOF1 extended): the kind a GPU's
// JPEG engines decode. Reads marker lengths only, never the entropy-coded
// data; false for anything else, malformed files included.
bool is_sequential_huffman_jpeg(std::span<const uint8_t> jpeg);

}  // namespace tandem::image
