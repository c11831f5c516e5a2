#include "image/image.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"

namespace tandem::image {

namespace {
constexpr size_t kAlignment = 64;
}

void PixelBuffer::Free::operator()(uint8_t* p) const { std::free(p); }

PixelBuffer::PixelBuffer(const PixelBuffer& other) {
  ensure(other.capacity_);
  if (other.capacity_) std::memcpy(data_.get(), other.data_.get(), other.capacity_);
}

PixelBuffer& PixelBuffer::operator=(const PixelBuffer& other) {
  if (this != &other) {
    ensure(other.capacity_);
    if (other.capacity_) std::memcpy(data_.get(), other.data_.get(), other.capacity_);
  }
  return *this;
}

void PixelBuffer::ensure(size_t bytes) {
  if (bytes <= capacity_) return;
  // aligned_alloc wants a multiple of the alignment.
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (!p) throw Error("cannot allocate " + std::to_string(bytes) + " bytes for an image");
  data_.reset(static_cast<uint8_t*>(p));
  capacity_ = rounded;
}

void Image::reshape(int w, int h, int c) {
  check(w > 0 && h > 0, "image size " + std::to_string(w) + "x" + std::to_string(h) + " is empty");
  check(c == 1 || c == 3 || c == 4, "image has " + std::to_string(c) + " channels");
  size_t bytes = 0;
  if (__builtin_mul_overflow(size_t(w), size_t(h), &bytes) ||
      __builtin_mul_overflow(bytes, size_t(c), &bytes)) {
    throw Error("image size " + std::to_string(w) + "x" + std::to_string(h) + " overflows");
  }
  pixels.ensure(bytes);
  width = w;
  height = h;
  channels = c;
}

}  // namespace tandem::image
