#pragma once
// The recognition model's view of a face, from a decode sharper than the
// detector's: only the region around the face is decoded (image/
// region_decode.h), at the smallest JPEG scale that still gives the crop
// the model's resolution, so a face 5% of a 12-MP photo's width is read
// from about 200 of its pixels instead of the 25 a 1/8 decode leaves.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "image/image.h"
#include "image/region_decode.h"
#include "image/resize.h"
#include "pipeline/face_detector.h"

namespace tandem::pipeline {

// A photo's pixels decoded earlier and still held (the GPU JPEG decoder's
// full-resolution decode, GpuJpegDecoder::read_kept): the upright rectangle
// asked for, clipped to the photo and its sides cut to multiples of
// `shrink` (1, 2, 4 or 8), into `*clipped`, and its pixels into `out`, each
// the mean of a shrink x shrink block; false when they are gone or less
// than a block is left.
using KeptPixels = std::function<bool(const image::PixelRect& upright, int shrink,
                                      image::Image& out, image::PixelRect* clipped)>;

// A photo's pixels held for its face crops, and where they are: the GPU
// decoder's full-size decode, or a CPU decoder's for the network.
struct HeldPixels {
  KeptPixels read;  // null: none held
  bool on_gpu = false;
  explicit operator bool() const { return bool(read); }
};

// The same from the pixels a CPU decoder gave the network: upright, DCT-
// scaled to 1/s of the photo. They serve a face whose crop the region
// decode would scale by 1/s or less (shrink a multiple of s), so that a
// large face, or one of BlazeFace's large false positives, costs no second
// decode; smaller faces are refused. Null when they cannot serve (empty,
// approximate pixels, a scale not 1/1, 1/2, 1/4 or 1/8).
KeptPixels kept_decode(std::shared_ptr<const image::Image> decoded);

// One thread's cropper (it reuses its buffers).
class FaceCropper {
 public:
  explicit FaceCropper(int size) : size_(size) {}

  // Writes face.crop of the photo `bytes` (its upright pixels), resized to
  // size x size, RGB, 0..255 floats, into `out` (size * size * 3). Parts of
  // the square beyond the photo are black, as TF.js's cropAndResize leaves
  // them. Throws tandem::Error naming `name` when the photo cannot be read.
  void crop(std::span<const uint8_t> bytes, const Face& face, const image::DecodeOptions& opt,
            std::string_view name, float* out);

  // The same for several faces of one photo, out[k] for faces[k], each as
  // crop() would write it: the faces that need the same DCT scale share
  // one pass over the file (a group photo's faces, decoded one by one,
  // each read the rows above them again).
  void crop(std::span<const uint8_t> bytes, std::span<const Face* const> faces, const image::DecodeOptions& opt,
            std::string_view name, std::span<float* const> out);

  // The same from the photo's kept full-resolution pixels: each face's
  // square read from `pixels` shrunk by the factor crop() would scale its
  // DCT by (block means standing in for the scaled IDCT, so that a large
  // face crosses from the GPU small), then resized as crop() resizes its
  // decode. False, with nothing promised in `out`, when they are gone.
  bool crop_kept(const KeptPixels& pixels, std::span<const Face* const> faces,
                 std::span<float* const> out);

 private:
  // Writes the face's square, cut from region_ (decoded at `scale`, its
  // pixel (0, 0) at upright `origin`), to out.
  void cut(const Face& face, double scale, const image::PixelRect& origin, float* out);

  int size_;
  image::Image region_, square_;
  image::Resampler resampler_;
  std::vector<uint8_t> pixels_;
};

}  // namespace tandem::pipeline
