#include "image/heif_decoder.h"

#include <libheif/heif.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "core/error.h"
#include "image/orientation.h"
#include "image/pixel_limit.h"

namespace tandem::image {

namespace {

ErrorContext file_context(std::string_view name) { return ErrorContext{std::string(name), {}, {}, {}}; }

void check_heif(const heif_error& err, const std::string& what, std::string_view name) {
  if (err.code == heif_error_Ok) return;
  throw Error(what + ": " + (err.message ? err.message : "unknown libheif error"), file_context(name));
}

// libheif registers its codecs in heif_init; it is reference-counted and
// never undone here, as decoding may happen until the process exits.
void init_libheif() {
  static std::once_flag once;
  std::call_once(once, [] { heif_init(nullptr); });
}

struct ContextFree {
  void operator()(heif_context* c) const { heif_context_free(c); }
};
struct HandleRelease {
  void operator()(const heif_image_handle* h) const { heif_image_handle_release(h); }
};
struct ImageRelease {
  void operator()(const heif_image* i) const { heif_image_release(i); }
};
struct OptionsFree {
  void operator()(heif_decoding_options* o) const { heif_decoding_options_free(o); }
};

bool is_avif(std::span<const uint8_t> bytes) {
  if (bytes.size() < 12) return false;
  const heif_brand2 brand = heif_read_main_brand(bytes.data(), int(bytes.size()));
  return brand == heif_fourcc_to_brand("avif") || brand == heif_fourcc_to_brand("avis");
}

// The container's claimed sizes, before and after its transformations
// (a clap crop makes the decoded image smaller than the coded one).
void check_sizes(const heif_image_handle* h, const DecodeOptions& opt, std::string_view name) {
  check_pixel_limit("HEIF", heif_image_handle_get_ispe_width(h), heif_image_handle_get_ispe_height(h),
                    opt, name);
  check_pixel_limit("HEIF", heif_image_handle_get_width(h), heif_image_handle_get_height(h), opt, name);
}

void copy_rgb(const heif_image* img, Image& out, std::string_view name) {
  const int w = heif_image_get_width(img, heif_channel_interleaved);
  const int h = heif_image_get_height(img, heif_channel_interleaved);
  check(heif_image_get_bits_per_pixel_range(img, heif_channel_interleaved) == 8,
        "libheif did not deliver 8-bit RGB", file_context(name));
  int stride = 0;
  const uint8_t* src = heif_image_get_plane_readonly(img, heif_channel_interleaved, &stride);
  check(src != nullptr && w > 0 && h > 0 && stride >= 3 * w, "libheif returned no pixels",
        file_context(name));
  out.reshape(w, h, 3);
  for (int y = 0; y < h; ++y) std::memcpy(out.row(y), src + size_t(y) * size_t(stride), out.stride());
}

}  // namespace

void decode_heif_into(Image& out, std::span<const uint8_t> bytes, const DecodeOptions& opt,
                      std::string_view name) {
  check(!bytes.empty(), "HEIF file is empty (0 bytes)", file_context(name));
  init_libheif();
  if (is_avif(bytes) && !heif_have_decoder_for_format(heif_compression_AV1)) {
    throw Error::unsupported("AVIF not supported (this libheif has no AV1 decoder)", file_context(name));
  }
  std::unique_ptr<heif_context, ContextFree> ctx(heif_context_alloc());
  check(ctx != nullptr, "heif_context_alloc failed", file_context(name));
  check_heif(heif_context_read_from_memory_without_copy(ctx.get(), bytes.data(), bytes.size(), nullptr),
             "not a readable HEIF file", name);
  heif_image_handle* raw_handle = nullptr;
  check_heif(heif_context_get_primary_image_handle(ctx.get(), &raw_handle), "HEIF has no primary image",
             name);
  std::unique_ptr<const heif_image_handle, HandleRelease> handle(raw_handle);
  check_sizes(handle.get(), opt, name);
  // A coded image without a decoder configuration (hvcC/av1C) says nothing
  // true about its bitstream: fuzzing found a 2.5 kB 96x64 one whose codec
  // then allocated 3.4 GB (libheif 1.15 checks none of that).
  check(heif_image_handle_get_luma_bits_per_pixel(handle.get()) > 0,
        "HEIF image has no valid decoder configuration (hvcC/av1C)", file_context(name));

  std::unique_ptr<heif_decoding_options, OptionsFree> options(heif_decoding_options_alloc());
  check(options != nullptr, "heif_decoding_options_alloc failed", file_context(name));
  options->ignore_transformations = opt.apply_orientation ? 0 : 1;
  options->convert_hdr_to_8bit = 1;
  heif_image* raw_image = nullptr;
  check_heif(heif_decode_image(handle.get(), &raw_image, heif_colorspace_RGB, heif_chroma_interleaved_RGB,
                               options.get()),
             "cannot decode HEIF", name);
  std::unique_ptr<const heif_image, ImageRelease> image(raw_image);
  copy_rgb(image.get(), out, name);
  turn_upright(out, 1, out);  // nothing left to turn: libheif applied the transformations
}

std::vector<uint8_t> heif_exif_block(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return {};
  init_libheif();
  std::unique_ptr<heif_context, ContextFree> ctx(heif_context_alloc());
  if (!ctx || heif_context_read_from_memory_without_copy(ctx.get(), bytes.data(), bytes.size(), nullptr).code !=
                  heif_error_Ok)
    return {};
  heif_image_handle* raw_handle = nullptr;
  if (heif_context_get_primary_image_handle(ctx.get(), &raw_handle).code != heif_error_Ok) return {};
  std::unique_ptr<const heif_image_handle, HandleRelease> handle(raw_handle);
  heif_item_id id = 0;
  if (heif_image_handle_get_list_of_metadata_block_IDs(handle.get(), "Exif", &id, 1) < 1) return {};
  const size_t size = heif_image_handle_get_metadata_size(handle.get(), id);
  if (size < 4 || size > (size_t(1) << 24)) return {};
  std::vector<uint8_t> block(size);
  if (heif_image_handle_get_metadata(handle.get(), id, block.data()).code != heif_error_Ok) return {};
  // ISO/IEC 23008-12: a 32-bit big-endian offset from after itself to the
  // TIFF header (past an "Exif\0\0" where a writer kept one).
  const size_t offset = size_t(block[0]) << 24 | size_t(block[1]) << 16 | size_t(block[2]) << 8 | size_t(block[3]);
  if (offset > size - 4) return {};
  static constexpr uint8_t kExifHeader[6] = {'E', 'x', 'i', 'f', 0, 0};
  size_t start = 4 + offset;
  if (offset >= 6 && std::memcmp(block.data() + start - 6, kExifHeader, 6) == 0) start -= 6;
  return std::vector<uint8_t>(block.begin() + std::ptrdiff_t(start), block.end());
}

}  // namespace tandem::image
