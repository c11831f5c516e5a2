#pragma once
// The DCT-scaled decode of a progressive JPEG cut to some of its scans
// (copy_scans' output), through libjpeg's own API: TurboJPEG cannot turn off
// libjpeg's interblock smoothing, which, seeing AC coefficients missing or
// short of bits, would estimate them (and since libjpeg-turbo 2.1 adjust DC
// too). Off, a 1/8 decode of the ScanCut::eighth cut equals a 1/8 decode of
// the whole original file, where no coefficient is missing; and a cut file
// costs no smoothing pass.
#include <cstdint>
#include <span>
#include <string_view>

namespace tandem::image {

// Decodes at scale `scale_num`/`scale_denom` into `dst`, `width` x `height`
// pixels of `channels` bytes (1: gray, 3: RGB, 4: CMYK as libjpeg stores it,
// Adobe-inverted), rows `pitch` bytes apart; the size must be the scaled one. Throws tandem::Error naming
// `name` with libjpeg's message on an error, or on a warning (corrupt data)
// unless `accept_warnings`.
void decode_cut_scans(std::span<const uint8_t> cut, int scale_num, int scale_denom, uint8_t* dst,
                      int width, int height, int channels, int pitch, bool accept_warnings,
                      std::string_view name);

}  // namespace tandem::image
