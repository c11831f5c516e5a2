#include "cuda/nvjpeg/resample_plan.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/error.h"
#include "cuda/check.h"

namespace tandem::cuda {

namespace {

constexpr int kWeightBits = 22;  // PIL's precision: 32 - 8 - 2

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

int32_t fixed_point(double w) {
  return int32_t(w < 0 ? -0.5 + w * (1 << kWeightBits) : 0.5 + w * (1 << kWeightBits));
}

// torchvision Resize(int): the shorter side becomes `shorter`, the longer
// int(shorter * long / short) (Python's true division, then truncation).
void resized_size(int width, int height, int shorter, int& out_w, int& out_h) {
  const bool portrait = width <= height;
  const int short_side = portrait ? width : height;
  const int long_side = portrait ? height : width;
  const double scaled = double(int64_t(shorter) * long_side) / double(short_side);
  check(scaled < double(1 << 30), "GPU preprocess: resized side too large");
  out_w = portrait ? shorter : int(scaled);
  out_h = portrait ? int(scaled) : shorter;
}

// torchvision CenterCrop: int(round((size - crop) / 2)), halves to even.
int crop_offset(int size, int crop) {
  const int d = size - crop;
  const int half = d / 2;
  return (d % 2 == 1 && half % 2 == 1) ? half + 1 : half;
}

// image::preprocess_window: the resized size and the window's offset.
void resize_window(const GpuPreprocessParams& p, int width, int height, int& rw, int& rh, int& x0,
                   int& y0) {
  if (p.mode == GpuResizeMode::stretch) {
    rw = p.width, rh = p.height, x0 = 0, y0 = 0;
    return;
  }
  resized_size(width, height, p.resize, rw, rh);
  x0 = crop_offset(rw, p.crop), y0 = crop_offset(rh, p.crop);
}

}  // namespace

void check_preprocess_params(const GpuPreprocessParams& p) {
  if (p.mode == GpuResizeMode::stretch) {
    check(p.width > 0 && p.width <= 16384 && p.height > 0 && p.height <= 16384,
          "GPU preprocess: the stretched size must be in 1..16384, got " + std::to_string(p.width) +
              "x" + std::to_string(p.height));
  } else {
    check(p.resize > 0 && p.resize <= 16384,
          "GPU preprocess: resize must be in 1..16384, got " + std::to_string(p.resize));
    check(p.crop > 0 && p.crop <= p.resize, "GPU preprocess: crop must be in 1..resize (" +
                                                std::to_string(p.resize) + "), got " +
                                                std::to_string(p.crop));
  }
  if (p.normalize)
    for (float s : p.std) check(s != 0.0f, "GPU preprocess: std must be non-zero");
  check(p.max_pixels > 0, "GPU preprocess: max_pixels must be positive");
}

ResampleAxisPlan plan_resample_axis(int in_size, int out_size, int first, int count, bool padded) {
  check(in_size > 0 && out_size > 0 && count > 0 && first >= 0 && first + count <= out_size,
        "GPU preprocess: bad resample window");
  const double scale = double(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;  // triangle support 1, widened by the downscale
  const int ksize = int(std::ceil(support)) * 2 + 1;
  const double ss = 1.0 / filterscale;  // multiplied, not divided: PIL's rounding
  ResampleAxisPlan a;
  a.taps = padded ? std::min(ksize, in_size) : ksize;
  a.start.assign(size_t(count), 0);
  a.length.assign(size_t(count), 0);
  a.weights.assign(size_t(count) * size_t(a.taps), 0);
  std::vector<double> k(static_cast<size_t>(ksize));
  for (int i = 0; i < count; ++i) {
    const double center = (first + i + 0.5) * scale;
    const int xmin = std::max(int(center - support + 0.5), 0);
    const int n = std::min(int(center + support + 0.5), in_size) - xmin;
    double sum = 0.0;
    for (int x = 0; x < n; ++x) {
      k[size_t(x)] = triangle((x + xmin - center + 0.5) * ss);
      sum += k[size_t(x)];
    }
    // Padding slides the window left to end inside the axis; the leading
    // taps it adds weigh 0.
    const int shift = padded ? std::max(xmin + a.taps - in_size, 0) : 0;
    a.start[size_t(i)] = xmin - shift;
    a.length[size_t(i)] = n + shift;
    int32_t* w = a.weights.data() + size_t(i) * size_t(a.taps) + size_t(shift);
    for (int x = 0; x < n; ++x) w[x] = fixed_point(sum != 0.0 ? k[size_t(x)] / sum : k[size_t(x)]);
  }
  return a;
}

PreprocessPlan plan_preprocess(int stored_width, int stored_height, int orientation, const GpuPreprocessParams& p) {
  check(stored_width > 0 && stored_height > 0, "GPU preprocess: empty image");
  check(orientation >= 1 && orientation <= 8,
        "EXIF orientation " + std::to_string(orientation) + " is not one of 1..8");
  const bool swap = orientation >= 5;
  PreprocessPlan plan;
  plan.upright_width = swap ? stored_height : stored_width;
  plan.upright_height = swap ? stored_width : stored_height;
  int rw = 0, rh = 0, x0 = 0, y0 = 0;
  resize_window(p, plan.upright_width, plan.upright_height, rw, rh, x0, y0);
  const int width = p.output_width(), height = p.output_height();
  plan.horizontal = plan_resample_axis(plan.upright_width, rw, x0, width, /*padded=*/true);
  plan.vertical = plan_resample_axis(plan.upright_height, rh, y0, height, /*padded=*/false);
  const size_t last = size_t(height - 1);
  plan.row0 = plan.vertical.start[0];
  plan.rows = plan.vertical.start[last] + plan.vertical.length[last] - plan.row0;
  return plan;
}

DevicePreprocessPlan upload_preprocess_plan(PreprocessPlan plan, cudaStream_t stream) {
  DevicePreprocessPlan c;
  c.plan = std::move(plan);
  const ResampleAxisPlan& h = c.plan.horizontal;
  const ResampleAxisPlan& v = c.plan.vertical;
  c.host.reserve(h.start.size() + h.weights.size() + 2 * v.start.size() + v.weights.size());
  const size_t h_start = 0, h_weights = h_start + h.start.size(),
               v_start = h_weights + h.weights.size(), v_length = v_start + v.start.size(),
               v_weights = v_length + v.length.size();
  for (const auto* part : {&h.start, &h.weights, &v.start, &v.length, &v.weights})
    c.host.insert(c.host.end(), part->begin(), part->end());
  const size_t bytes = c.host.size() * sizeof(int32_t);
  c.device = DeviceBuffer(bytes, "cudaMalloc(JPEG preprocess weights)", {});
  check_cuda(cudaMemcpyAsync(c.device.get(), c.host.data(), bytes, cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync(JPEG preprocess weights)");
  const auto* base = static_cast<const int32_t*>(c.device.get());
  c.horizontal = {base + h_start, nullptr, base + h_weights, h.taps};
  c.vertical = {base + v_start, base + v_length, base + v_weights, v.taps};
  return c;
}

}  // namespace tandem::cuda
