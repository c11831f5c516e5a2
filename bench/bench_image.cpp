// Decode + classification preprocessing of a photo, full-scale vs DCT-scaled
// decode, with PIL + torchvision timed on the same files in the same run
// (a /usr/bin/python3 subprocess, one thread) and printed as a ratio
// counter `x_vs_PIL` (> 1: tandem is faster; with N threads, per-thread
// throughput of tandem vs one PIL process). A 300x300 region of the 12-MP
// photo (decode_region_into, a face crop) is timed against the whole
// photo's full-scale decode (counter `x_vs_whole`).
//
// Inputs: darknet's kite.jpg (1352x900, a real photo) and a synthetic
// 12-MP camera-sized JPEG (kite upscaled to 4032x3024 with sensor-like noise,
// quality 92, 4:2:0), written to the temp dir at startup.
#include <benchmark/benchmark.h>
#include <turbojpeg.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <algorithm>
#include <cstdlib>
#include <vector>

#include "image/decode.h"
#include "image/jpeg_decoder.h"
#include "image/preprocess.h"
#include "image/region_decode.h"
#include "image/resize.h"
#include "profile/clock.h"

using namespace tandem::image;
namespace fs = std::filesystem;

namespace {

// TANDEM_BENCH_PHOTO overrides the photo (for machines without darknet).
const std::string kKite = std::getenv("TANDEM_BENCH_PHOTO") ? std::getenv("TANDEM_BENCH_PHOTO")
                                                            : "/usr/share/darknet/data/kite.jpg";

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// kite upscaled to 4032x3024 plus +-6 uniform noise per sample, JPEG q92
// (progressive: the same pixels in libjpeg's standard progressive scans).
std::string make_camera_jpeg(bool progressive) {
  const std::string p = (fs::temp_directory_path() /
                         (progressive ? "tandem_bench_12mp_prog.jpg" : "tandem_bench_12mp.jpg"))
                            .string();
  Image big = resize_image(decode_image_file(kKite), 4032, 3024, ResampleFilter::bicubic);
  std::mt19937 rng(7);
  for (size_t i = 0; i < big.bytes(); ++i) {
    int v = int(big.data()[i]) + int(rng() % 13) - 6;
    big.data()[i] = uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
  }
  tjhandle tj = tjInitCompress();
  unsigned char* jpg = nullptr;
  unsigned long size = 0;
  if (!tj || tjCompress2(tj, big.data(), big.width, 0, big.height, TJPF_RGB, &jpg, &size,
                         TJSAMP_420, 92, progressive ? TJFLAG_PROGRESSIVE : 0) != 0)
    throw std::runtime_error("cannot make the 12-MP test JPEG");
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<char*>(jpg), std::streamsize(size));
  tjFree(jpg);
  tjDestroy(tj);
  return p;
}

const std::string& camera_jpeg_path() {
  static const std::string path = make_camera_jpeg(false);
  return path;
}

const std::string& progressive_camera_jpeg_path() {
  static const std::string path = make_camera_jpeg(true);
  return path;
}

// Seconds per image for torchvision's classification transform on PIL
// (Image.open + convert + Resize(256) + CenterCrop(224) + ToTensor +
// Normalize) or, with `draft` > 0, for PIL's draft-mode decode alone
// (libjpeg's DCT scaling to the smallest scale >= draft x draft, then
// convert), the best of 3 timed runs, measured once per file and kind.
double pil_seconds(const std::string& path, int draft = 0) {
  static std::map<std::string, double> cache;
  const std::string key = path + "#" + std::to_string(draft);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const std::string side = std::to_string(draft);
  const std::string decode =
      draft ? "(lambda im: (im.draft('RGB', (" + side + ", " + side +
                  ")), im.convert('RGB')))(Image.open('" + path + "'))"
            : "t(Image.open('" + path + "').convert('RGB'))";
  const std::string code =
      "import time, torch, torchvision.transforms as T\nfrom PIL import Image\n"
      "torch.set_num_threads(1)\n"
      "t = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),"
      " T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])\n"
      "f = lambda: " +
      decode +
      "\n"
      "f(); n = max(3, int(1.0 / (lambda s: (f(), time.perf_counter() - "
      "s)[1])(time.perf_counter())))\n"
      "best = 1e9\n"
      "for _ in range(3):\n"
      "    s = time.perf_counter()\n"
      "    for _ in range(n): f()\n"
      "    best = min(best, (time.perf_counter() - s) / n)\n"
      "print(best)\n";
  const std::string script = (fs::temp_directory_path() / "tandem_bench_pil.py").string();
  std::ofstream(script) << code;
  double seconds = 0;
  if (FILE* p = popen(("/usr/bin/python3 " + script).c_str(), "r")) {
    if (std::fscanf(p, "%lf", &seconds) != 1) seconds = 0;
    pclose(p);
  }
  std::printf("%s on %s: %.2f ms/image\n", draft ? "PIL draft decode" : "PIL+torchvision",
              path.c_str(), seconds * 1e3);
  return cache[key] = seconds;
}

// Both sides in wall-clock seconds per image (the PIL side cannot report
// CPU time), so a loaded machine slows both alike. `draft`: against PIL's
// draft-mode decode (counter x_vs_PIL_draft), else its classification transform.
void set_ratio(benchmark::State& state, const std::string& path, uint64_t elapsed_ns, int draft = 0) {
  const double pil = pil_seconds(path, draft);
  const double ours = double(elapsed_ns) * 1e-9 / double(state.iterations());
  if (pil > 0 && ours > 0) state.counters[draft ? "x_vs_PIL_draft" : "x_vs_PIL"] = pil / ours;
}

// Decode (DCT-scaled to >= 256 when `scaled`) then preprocess to 3x224x224.
void run_pipeline(benchmark::State& state, const std::string& path, bool scaled) {
  const std::vector<uint8_t> bytes = read_all(path);
  DecodeOptions opt;
  if (scaled) opt.min_width = opt.min_height = 256;
  Image img;
  Preprocessor pre;
  std::vector<float> out(pre.output_size());
  const uint64_t start = tandem::profile::now_ns();
  for (auto _ : state) {
    decode_image_into(img, bytes, opt, path);
    pre.run(img, out);
    benchmark::DoNotOptimize(out.data());
  }
  const uint64_t elapsed = tandem::profile::now_ns() - start;
  state.SetLabel(std::to_string(img.width) + "x" + std::to_string(img.height) + " decoded");
  if (state.thread_index() == 0) set_ratio(state, path, elapsed);
}

void run_decode(benchmark::State& state, const std::string& path, bool scaled) {
  const std::vector<uint8_t> bytes = read_all(path);
  DecodeOptions opt;
  if (scaled) opt.min_width = opt.min_height = 256;
  Image img;
  for (auto _ : state) {
    decode_image_into(img, bytes, opt, path);
    benchmark::DoNotOptimize(img.data());
  }
  state.SetLabel(std::to_string(img.width) + "x" + std::to_string(img.height));
}

// A progressive photo decoded DCT-scaled to cover min x min, with or without
// skipping scans (at 1/8 those the scale does not read, at 1/4 luma's
// refinement scans); ratio against PIL's draft mode on the same file.
void run_progressive_decode(benchmark::State& state, int min, bool skip) {
  const std::string& path = progressive_camera_jpeg_path();
  const std::vector<uint8_t> bytes = read_all(path);
  DecodeOptions opt;
  opt.min_width = opt.min_height = min;
  opt.skip_unread_scans = skip;
  opt.coarse_progressive = skip;
  Image img;
  const uint64_t start = tandem::profile::now_ns();
  for (auto _ : state) {
    decode_image_into(img, bytes, opt, path);
    benchmark::DoNotOptimize(img.data());
  }
  const uint64_t elapsed = tandem::profile::now_ns() - start;
  state.SetLabel(std::to_string(img.width) + "x" + std::to_string(img.height));
  set_ratio(state, path, elapsed, /*draft=*/min);
}

// Seconds of one whole-photo full-scale decode (the best of 3), measured
// once per file, for the region decode's counter `x_vs_whole`.
double whole_decode_seconds(const std::string& path) {
  static std::map<std::string, double> cache;
  if (auto it = cache.find(path); it != cache.end()) return it->second;
  const std::vector<uint8_t> bytes = read_all(path);
  Image img;
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const uint64_t start = tandem::profile::now_ns();
    decode_image_into(img, bytes, {}, path);
    best = std::min(best, double(tandem::profile::now_ns() - start) * 1e-9);
  }
  return cache[path] = best;
}

// A 300x300 face at full scale, at the top, middle or bottom of the photo
// (`position` 0, 1, 2): libjpeg entropy-decodes the rows down to the
// region's bottom (a progressive file: all of it) but runs the IDCT and
// color conversion only on the region. `opt`: coarse_progressive skips a
// progressive file's luma refinement scans, as tag's face stage does.
void run_region_decode(benchmark::State& state, const std::string& path, int position,
                       const DecodeOptions& opt = {}) {
  const std::vector<uint8_t> bytes = read_all(path);
  const PixelRect region{1866, position * (3024 - 300) / 2, 300, 300};
  Image img;
  const uint64_t start = tandem::profile::now_ns();
  for (auto _ : state) {
    decode_region_into(img, bytes, region, 0, opt, path, nullptr, nullptr);
    benchmark::DoNotOptimize(img.data());
  }
  const double ours = double(tandem::profile::now_ns() - start) * 1e-9 / double(state.iterations());
  state.SetLabel(std::to_string(img.width) + "x" + std::to_string(img.height) + " at y " +
                 std::to_string(region.y));
  state.counters["x_vs_whole"] = whole_decode_seconds(path) / ours;
}

void run_preprocess(benchmark::State& state, const std::string& path, bool scaled) {
  DecodeOptions opt;
  if (scaled) opt.min_width = opt.min_height = 256;
  const Image img = decode_image_file(path, opt);
  Preprocessor pre;
  std::vector<float> out(pre.output_size());
  for (auto _ : state) {
    pre.run(img, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel("from " + std::to_string(img.width) + "x" + std::to_string(img.height));
}

void BM_Pipeline_Kite_Full(benchmark::State& s) { run_pipeline(s, kKite, false); }
void BM_Pipeline_Kite_Scaled(benchmark::State& s) { run_pipeline(s, kKite, true); }
void BM_Pipeline_12MP_Full(benchmark::State& s) { run_pipeline(s, camera_jpeg_path(), false); }
void BM_Pipeline_12MP_Scaled(benchmark::State& s) { run_pipeline(s, camera_jpeg_path(), true); }
void BM_Decode_12MP_Full(benchmark::State& s) { run_decode(s, camera_jpeg_path(), false); }
void BM_Decode_12MP_Scaled(benchmark::State& s) { run_decode(s, camera_jpeg_path(), true); }
void BM_Decode_12MP_Progressive_Scaled(benchmark::State& s) {
  run_progressive_decode(s, 256, s.range(0) != 0);
}
// The detector's input (512x512): 1/4 scale for a 12-MP photo.
void BM_Decode_12MP_Progressive_Quarter(benchmark::State& s) {
  run_progressive_decode(s, 512, s.range(0) != 0);
}
// Arguments: the region's position (0 top, 1 middle, 2 bottom) and the
// file (0 baseline, 1 progressive, 2 progressive without luma's refinement
// scans).
void BM_Decode_12MP_Region(benchmark::State& s) {
  DecodeOptions opt;
  opt.coarse_progressive = s.range(1) == 2;
  run_region_decode(s, s.range(1) ? progressive_camera_jpeg_path() : camera_jpeg_path(),
                    int(s.range(0)), opt);
}
void BM_Preprocess_12MP_Full(benchmark::State& s) { run_preprocess(s, camera_jpeg_path(), false); }
void BM_Preprocess_12MP_Scaled(benchmark::State& s) { run_preprocess(s, camera_jpeg_path(), true); }

}  // namespace

BENCHMARK(BM_Pipeline_Kite_Full)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pipeline_Kite_Scaled)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Pipeline_12MP_Full)->Unit(benchmark::kMillisecond);
// Many threads, one photo each at a time: the photo-tagging pipeline's shape.
BENCHMARK(BM_Pipeline_12MP_Scaled)
    ->Unit(benchmark::kMillisecond)
    ->ThreadRange(1, int(std::max(2u, std::thread::hardware_concurrency())))
    ->UseRealTime();
BENCHMARK(BM_Decode_12MP_Full)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Decode_12MP_Scaled)->Unit(benchmark::kMillisecond);
// Argument: skip the scans 1/8 scale does not read (1) or decode them all (0).
BENCHMARK(BM_Decode_12MP_Progressive_Scaled)->Unit(benchmark::kMillisecond)->Arg(0)->Arg(1);
// Argument: skip luma's refinement scans (1, coarse_progressive) or not (0).
BENCHMARK(BM_Decode_12MP_Progressive_Quarter)->Unit(benchmark::kMillisecond)->Arg(0)->Arg(1);
BENCHMARK(BM_Decode_12MP_Region)
    ->Unit(benchmark::kMillisecond)
    ->ArgsProduct({{0, 1, 2}, {0, 1, 2}});
BENCHMARK(BM_Preprocess_12MP_Full)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Preprocess_12MP_Scaled)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
