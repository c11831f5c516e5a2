#pragma once
// Decoding by content, not by file name: the first bytes decide JPEG, PNG,
// WebP or HEIF (HEIC, AVIF).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "image/image.h"

namespace tandem::image {

enum class ImageFormat { unknown, jpeg, png, webp, heif };

// The bytes sniff_format needs at most: a caller that only classifies files
// reads this many.
inline constexpr size_t kSniffBytes = 16;

// Looks at the magic bytes only (JPEG: FF D8 FF; PNG: the 8-byte signature;
// WebP: "RIFF" size "WEBP"; HEIF: an ISO-BMFF "ftyp" box whose major brand
// is an image one: heic heix heim heis hevc hevx mif1 mif2 msf1 avif avis).
ImageFormat sniff_format(std::span<const uint8_t> bytes);

// "JPEG", "PNG", "WebP", "HEIF" or "unknown".
const char* format_name(ImageFormat format);

// Reads a whole file; throws tandem::Error naming it when it cannot be read
// or is larger than max_bytes.
std::vector<uint8_t> read_file_bytes(const std::string& path, int64_t max_bytes);
// The same into `out`, reusing its capacity (one buffer per decoding thread).
void read_file_into(std::vector<uint8_t>& out, const std::string& path, int64_t max_bytes);
// The first max_bytes of a file, or all of it when shorter; throws
// tandem::Error naming it when it cannot be read.
std::vector<uint8_t> read_file_head(const std::string& path, int64_t max_bytes);

// Decodes JPEG, PNG, WebP or HEIF bytes (into `out`, reusing its buffer).
// Anything else, including an empty file, is a tandem::Error naming `name`
// and, where it recognises it, the real format (GIF, BMP, TIFF, MP4, ...).
void decode_image_into(Image& out, std::span<const uint8_t> bytes, const DecodeOptions& opt,
                       std::string_view name);

Image decode_image(std::span<const uint8_t> bytes, const DecodeOptions& opt = {},
                   std::string_view name = "<memory>");

Image decode_image_file(const std::string& path, const DecodeOptions& opt = {});

// A JPEG is decoded DCT-scaled to >= min_width x min_height; other formats at full size.
Image decode_image_file(const std::string& path, int min_width, int min_height);

}  // namespace tandem::image
