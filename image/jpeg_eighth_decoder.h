#pragma once
// The 1/8-scale decode of a progressive JPEG cut to the scans it reads
// (copy_scans_for_eighth's output), through libjpeg's own API: TurboJPEG
// cannot turn off libjpeg's interblock smoothing, which, seeing AC
// coefficients missing, would estimate them (and since libjpeg-turbo 2.1
// adjust DC too). Off, the output equals a 1/8 decode of the whole original
// file, where no coefficient is missing.
#include <cstdint>
#include <span>
#include <string_view>

namespace tandem::image {

// Decodes into `dst`, `width` x `height` pixels of `channels` bytes (1: gray,
// 3: RGB, 4: CMYK as libjpeg stores it, Adobe-inverted), rows `pitch` bytes
// apart; the size must be the 1/8-scaled one. Throws tandem::Error naming
// `name` with libjpeg's message on an error, or on a warning (corrupt data)
// unless `accept_warnings`.
void decode_eighth_scans(std::span<const uint8_t> dc_only, uint8_t* dst, int width, int height,
                         int channels, int pitch, bool accept_warnings, std::string_view name);

}  // namespace tandem::image
