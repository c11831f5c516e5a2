#pragma once
// Helpers for the image tests: a scratch folder, file I/O, and running a
// Python reference (Debian's /usr/bin/python3 with python3-pil and
// python3-torchvision; plain `python3` on PATH may be a pyenv without them).
#include <gtest/gtest.h>
#include <png.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "image/image.h"

namespace tandem::image::testing {

inline const char* kDarknetData = "/usr/share/darknet/data/";
inline const std::vector<std::string> kDarknetPhotos = {"dog",    "eagle",  "giraffe", "horses",
                                                        "kite",   "person", "scream"};

inline std::string photo_path(const std::string& name) {
  return std::string(kDarknetData) + name + ".jpg";
}

// A fresh folder per test under the system temp dir, removed afterwards
// unless the test failed (then its files help to see why).
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path = std::filesystem::temp_directory_path() /
           ("tandem_image_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" +
            info->name());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::filesystem::path& p, const void* data, size_t n) {
  std::ofstream out(p, std::ios::binary);
  out.write(static_cast<const char*>(data), std::streamsize(n));
}

// Binary PPM (P6) or PGM (P5): lossless, and PIL reads both.
inline void write_pnm(const std::filesystem::path& p, const Image& img) {
  std::ofstream out(p, std::ios::binary);
  out << (img.channels == 1 ? "P5\n" : "P6\n") << img.width << " " << img.height << "\n255\n";
  out.write(reinterpret_cast<const char*>(img.data()), std::streamsize(img.bytes()));
}

// Runs `code` with /usr/bin/python3; returns true on exit status 0.
inline bool run_python(const std::filesystem::path& dir, const std::string& code) {
  const auto script = dir / "reference.py";
  std::ofstream(script) << code;
  const std::string cmd = "/usr/bin/python3 " + script.string() + " > " + (dir / "py.log").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream log(dir / "py.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    ADD_FAILURE() << "python reference failed (needs python3-pil, python3-torchvision):\n" << text;
  }
  return rc == 0;
}

// The message of the tandem::Error that f throws, or a note that it threw none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no tandem::Error)";
}

// Largest |a[i] - b[i]| over two byte arrays of the same size.
inline int max_abs_diff(const uint8_t* a, const uint8_t* b, size_t n) {
  int m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::abs(int(a[i]) - int(b[i])));
  return m;
}

// Peak signal-to-noise ratio of `a` against `b` (same geometry), in dB
// (8-bit samples); 99 when they are equal.
inline double psnr(const Image& a, const Image& b) {
  double sum = 0;
  for (int y = 0; y < a.height; ++y)
    for (size_t k = 0; k < a.stride(); ++k) {
      const double d = double(a.row(y)[k]) - double(b.row(y)[k]);
      sum += d * d;
    }
  const double samples = double(a.height) * double(a.stride());
  return sum == 0 ? 99.0 : 10.0 * std::log10(255.0 * 255.0 * samples / sum);
}

// `src` encoded by TurboJPEG (pixel_format TJPF_*, subsampling TJSAMP_*,
// flags TJFLAG_*); empty, with a test failure, when it cannot be.
inline std::vector<uint8_t> encode_jpeg(const Image& src, int pixel_format, int subsampling, int quality,
                                        int flags) {
  tjhandle tj = tjInitCompress();
  if (!tj) {
    ADD_FAILURE() << "tjInitCompress: " << tjGetErrorStr2(nullptr);
    return {};
  }
  unsigned char* jpg = nullptr;
  unsigned long size = 0;
  std::vector<uint8_t> out;
  if (tjCompress2(tj, src.data(), src.width, 0, src.height, pixel_format, &jpg, &size, subsampling, quality,
                  flags) == 0)
    out.assign(jpg, jpg + size);
  else
    ADD_FAILURE() << "tjCompress2: " << tjGetErrorStr2(tj);
  tjFree(jpg);
  tjDestroy(tj);
  return out;
}

// `img` (gray or RGB) as a PNG from libpng's simplified writer.
inline std::vector<uint8_t> encode_png(const Image& img) {
  png_image pi{};
  pi.version = PNG_IMAGE_VERSION;
  pi.width = png_uint_32(img.width);
  pi.height = png_uint_32(img.height);
  pi.format = img.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&pi, nullptr, &size, 0, img.data(), 0, nullptr));
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(png_image_write_to_memory(&pi, out.data(), &size, 0, img.data(), 0, nullptr));
  out.resize(size);
  return out;
}

// `jpeg` with an EXIF APP1 segment right after SOI whose IFD0 holds only
// Orientation = `orientation` (big-endian TIFF, as many cameras write it).
inline std::vector<uint8_t> with_exif_orientation(const std::vector<uint8_t>& jpeg,
                                                  int orientation) {
  const uint8_t o = uint8_t(orientation);
  const std::vector<uint8_t> app1 = {
      0xFF, 0xE1, 0,   34,                           // APP1, length 34 (counts itself)
      'E',  'x',  'i', 'f', 0, 0,                    // EXIF header
      'M',  'M',  0,   42,  0, 0, 0, 8,              // TIFF: big-endian, IFD0 at 8
      0,    1,                                       // one entry
      0x01, 0x12, 0,   3,   0, 0, 0, 1, 0, o, 0, 0,  // Orientation, SHORT, count 1
      0,    0,    0,   0};                           // no next IFD
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + 2);
  out.insert(out.end(), app1.begin(), app1.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

// CMYK pixels from RGB ones (C, M, Y = R, G, B; K = their maximum): any CMYK
// content will do for a YCCK file, with K varying.
inline Image cmyk_of(const Image& rgb) {
  Image c(rgb.width, rgb.height, 4);
  for (size_t i = 0; i < size_t(rgb.width) * size_t(rgb.height); ++i) {
    const uint8_t* p = rgb.data() + 3 * i;
    uint8_t* q = c.data() + 4 * i;
    q[0] = p[0], q[1] = p[1], q[2] = p[2], q[3] = std::max({p[0], p[1], p[2]});
  }
  return c;
}

// The w x h rectangle of `in` from (x0, y0) shrunk by `f`: each pixel the
// mean, rounded half up, of an f x f block (w and h multiples of f).
inline Image block_means(const Image& in, int x0, int y0, int w, int h, int f) {
  Image out(w / f, h / f, 3);
  const int n = f * f;
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x)
      for (int c = 0; c < 3; ++c) {
        int sum = 0;
        for (int j = 0; j < f; ++j)
          for (int i = 0; i < f; ++i)
            sum += in.row(y0 + y * f + j)[(x0 + x * f + i) * in.channels + c];
        out.row(y)[3 * x + c] = uint8_t((sum + n / 2) / n);
      }
  return out;
}

}  // namespace tandem::image::testing
