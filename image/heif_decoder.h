#pragma once
// HEIF decoding (HEIC from phones and cameras; AVIF where libheif has an AV1
// decoder) through libheif to 8-bit interleaved RGB: the primary image,
// alpha dropped, HDR reduced to 8 bits, grayscale expanded to RGB.
// Orientation: HEIF stores it as transformations of the image item (irot,
// imir, clap), which the format defines as part of the picture, and libheif
// applies them; an EXIF Orientation in the metadata only describes the
// stored pixels and is not applied again (as libheif's heif-convert and
// Apple's viewers do). Image::orientation is therefore always 1, and
// full_width x full_height is the upright size. With
// DecodeOptions::apply_orientation off the transformations are skipped
// (pixels as coded), like the stored pixels of a JPEG.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "image/image.h"

namespace tandem::image {

// Throws tandem::Error naming `name` on a malformed or truncated file, an
// AVIF file when libheif has no AV1 decoder, or an image over
// opt.max_pixels (checked from the container's sizes before decoding; the
// limits libheif enforces itself stay in force too). min_width/min_height
// are ignored: HEVC and AV1 have no cheap scaled decode.
void decode_heif_into(Image& out, std::span<const uint8_t> bytes, const DecodeOptions& opt = {},
                      std::string_view name = "<memory>");

// The primary image's EXIF metadata block from "Exif\0\0" or the TIFF
// header on (HEIF's block starts with the offset of the TIFF header, which
// is skipped here); empty when there is none or the container cannot be
// parsed. Reads the container only, decodes nothing; never throws.
std::vector<uint8_t> heif_exif_block(std::span<const uint8_t> bytes);

}  // namespace tandem::image
