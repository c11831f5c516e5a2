#include "image/webp_decoder.h"

#include <webp/decode.h>
#include <webp/demux.h>

#include <memory>
#include <string>

#include "core/error.h"
#include "image/exif_orientation.h"
#include "image/orientation.h"
#include "image/pixel_limit.h"

namespace tandem::image {

namespace {

ErrorContext file_context(std::string_view name) { return ErrorContext{std::string(name), {}, {}, {}}; }

std::string status_text(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "corrupt data";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "file is truncated (not enough data)";
    default: return "error " + std::to_string(int(status));
  }
}

struct DemuxDelete {
  void operator()(WebPDemuxer* d) const { WebPDemuxDelete(d); }
};
struct AnimDecoderDelete {
  void operator()(WebPAnimDecoder* d) const { WebPAnimDecoderDelete(d); }
};

WebPData webp_data(std::span<const uint8_t> bytes) { return WebPData{bytes.data(), bytes.size()}; }

// The orientation from the EXIF chunk; 1 when there is none or the
// container cannot be parsed (the decoder then reports the damage).
int webp_orientation(std::span<const uint8_t> bytes) {
  const std::vector<uint8_t> block = webp_exif_block(bytes);
  return block.empty() ? 1 : orientation_from_exif_block(block);
}

// A still image, decoded by libwebp straight into `out` as RGB.
void decode_still(Image& out, std::span<const uint8_t> bytes, const WebPBitstreamFeatures& f,
                  std::string_view name) {
  WebPDecoderConfig config;
  check(WebPInitDecoderConfig(&config) != 0, "libwebp version mismatch", file_context(name));
  out.reshape(f.width, f.height, 3);
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = out.data();
  config.output.u.RGBA.stride = int(out.stride());
  config.output.u.RGBA.size = out.bytes();
  const VP8StatusCode status = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);  // frees nothing of ours (external memory), but is the contract
  if (status != VP8_STATUS_OK) throw Error("cannot decode WebP: " + status_text(status), file_context(name));
}

// An animation's first frame on its canvas (frames may cover part of it;
// the rest is transparent black), alpha then dropped.
void decode_first_frame(Image& out, std::span<const uint8_t> bytes, std::string_view name) {
  WebPAnimDecoderOptions options;
  check(WebPAnimDecoderOptionsInit(&options) != 0, "libwebp version mismatch", file_context(name));
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;  // the caller decodes files in parallel already
  const WebPData data = webp_data(bytes);
  std::unique_ptr<WebPAnimDecoder, AnimDecoderDelete> dec(WebPAnimDecoderNew(&data, &options));
  check(dec != nullptr, "cannot decode animated WebP: corrupt or truncated container", file_context(name));
  WebPAnimInfo info;
  check(WebPAnimDecoderGetInfo(dec.get(), &info) != 0 && info.frame_count > 0,
        "animated WebP has no frames", file_context(name));
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  check(WebPAnimDecoderGetNext(dec.get(), &rgba, &timestamp) != 0,
        "cannot decode the first frame of an animated WebP: corrupt or truncated data", file_context(name));
  out.reshape(int(info.canvas_width), int(info.canvas_height), 3);
  const size_t pixels = size_t(out.width) * size_t(out.height);
  uint8_t* dst = out.data();
  for (size_t i = 0; i < pixels; ++i) {
    dst[3 * i + 0] = rgba[4 * i + 0];
    dst[3 * i + 1] = rgba[4 * i + 1];
    dst[3 * i + 2] = rgba[4 * i + 2];
  }
}

}  // namespace

std::vector<uint8_t> webp_exif_block(std::span<const uint8_t> bytes) {
  const WebPData data = webp_data(bytes);
  std::unique_ptr<WebPDemuxer, DemuxDelete> demux(WebPDemux(&data));
  if (!demux || !(WebPDemuxGetI(demux.get(), WEBP_FF_FORMAT_FLAGS) & EXIF_FLAG)) return {};
  WebPChunkIterator chunk;
  std::vector<uint8_t> block;
  if (WebPDemuxGetChunk(demux.get(), "EXIF", 1, &chunk))
    block.assign(chunk.chunk.bytes, chunk.chunk.bytes + chunk.chunk.size);
  WebPDemuxReleaseChunkIterator(&chunk);
  return block;
}

void decode_webp_into(Image& out, std::span<const uint8_t> bytes, const DecodeOptions& opt,
                      std::string_view name) {
  check(!bytes.empty(), "WebP file is empty (0 bytes)", file_context(name));
  WebPBitstreamFeatures f;
  const VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &f);
  if (status != VP8_STATUS_OK) {
    throw Error("not a readable WebP header: " + status_text(status), file_context(name));
  }
  // For an animation these are the canvas size, which the decoder allocates.
  check_pixel_limit("WebP", f.width, f.height, opt, name);

  const int orientation = opt.apply_orientation ? webp_orientation(bytes) : 1;
  Image& stored = stored_pixels_target(out, orientation);
  if (f.has_animation) {
    decode_first_frame(stored, bytes, name);
  } else {
    decode_still(stored, bytes, f, name);
  }
  turn_upright(stored, orientation, out);
}

}  // namespace tandem::image
