// A photo's two freedesktop thumbnails (pipeline/thumbnails.h) from the
// 256-pixel image the GPU's JPEG engines fit, and their parts: the fit to
// 128 and each PNG encode. The peer, in the same run: Pillow making the
// 128-pixel thumbnail from the same 256-pixel image and saving both as PNG
// with the same zlib level (a /usr/bin/python3 subprocess), printed as the
// counter `x_vs_Pillow` (> 1: tandem is faster).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "image/png_encoder.h"
#include "image/resize.h"
#include "pipeline/thumbnails.h"

using namespace tandem;
namespace fs = std::filesystem;

namespace {

// A 256x171 photo-like image (a 3:2 camera's large thumbnail): smooth
// gradients with noise, which zlib compresses about as a photo's.
image::Image photo_like() {
  image::Image img(256, 171, 3);
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.f, 6.f);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x)
      for (int c = 0; c < 3; ++c) {
        float v = 60.f + 0.5f * float(x) + 0.3f * float(y) * float(c + 1) + noise(rng);
        img.row(y)[x * 3 + c] = uint8_t(std::clamp(v, 0.f, 255.f));
      }
  img.full_width = 4032, img.full_height = 2688;
  return img;
}

const fs::path kDir = fs::temp_directory_path() / "tandem_bench_thumbnails";

// Pillow's seconds for the same work (both PNGs written to a temp folder).
double pillow_seconds() {
  const std::string script = R"(python3 - <<'PY'
import time, io, os, tempfile, numpy as np
from PIL import Image
rng = np.random.default_rng(7)
y, x = np.mgrid[0:171, 0:256].astype(np.float32)
img = np.stack([60 + 0.5 * x + 0.3 * y * (c + 1) for c in range(3)], -1) + rng.normal(0, 6, (171, 256, 3))
im = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
d = tempfile.mkdtemp()
n, t0 = 200, time.perf_counter()
for i in range(n):
    im.save(os.path.join(d, "l%d.png" % i), compress_level=1)
    small = im.resize((128, 86), Image.BILINEAR, reducing_gap=None)
    small.save(os.path.join(d, "n%d.png" % i), compress_level=1)
print((time.perf_counter() - t0) / n)
PY)";
  double s = 0;
  if (FILE* p = popen(("/usr/bin/" + script).c_str(), "r")) {
    if (std::fscanf(p, "%lf", &s) != 1) s = 0;
    pclose(p);
  }
  std::printf("Pillow, both thumbnails from 256 px: %.3f ms\n", s * 1e3);
  return s;
}

void BM_ThumbnailStoreWrite(benchmark::State& state) {
  static const double pillow = pillow_seconds();
  const image::Image img = photo_like();
  fs::create_directories(kDir);
  pipeline::ThumbnailStore store((kDir / "cache").string(), (kDir / "fallback").string());
  int i = 0;
  for (auto _ : state) store.write((kDir / ("photo" + std::to_string(i++ % 64) + ".jpg")).string(), 1, 1, img);
  state.counters["x_vs_Pillow"] = benchmark::Counter(pillow * double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ThumbnailStoreWrite)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_EncodePng(benchmark::State& state) {
  image::Image img = photo_like();
  if (state.range(0) == 128) img = image::resize_image(img, 128, 86, image::ResampleFilter::bilinear);
  size_t bytes = 0;
  for (auto _ : state) bytes = image::encode_png(img, {{"Thumb::URI", "file:///x.jpg"}}, 1).size();
  state.counters["bytes"] = double(bytes);
}
BENCHMARK(BM_EncodePng)->Arg(256)->Arg(128)->Unit(benchmark::kMillisecond);

void BM_FitTo(benchmark::State& state) {
  const image::Image img = photo_like();
  const int w = int(state.range(0)), h = int(state.range(0) * 171 / 256);
  for (auto _ : state) benchmark::DoNotOptimize(image::resize_image(img, w, h, image::ResampleFilter::bilinear));
}
BENCHMARK(BM_FitTo)->Arg(256)->Arg(128)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
