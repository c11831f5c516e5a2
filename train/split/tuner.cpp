#include "train/split/tuner.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "profile/dynamic_location.h"
#include "profile/zone.h"
#include "train/backend.h"
#include "train/device_tensor.h"
#include "train/layers/init.h"
#include "train/split/channel_split.h"
#include "train/split/split_ratio.h"

namespace tandem::train {

namespace {

constexpr int kWarmup = 2, kReps = 5;
constexpr double kMinGain = 0.03;

// The median wall-clock seconds of `run` (home synchronized around each rep).
template <typename Run>
double seconds_of(const DeviceLink& link, Run&& run) {
  for (int i = 0; i < kWarmup; ++i) run();
  link.synchronize();
  std::vector<double> t;
  for (int i = 0; i < kReps; ++i) {
    auto start = std::chrono::steady_clock::now();
    run();
    link.synchronize();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(t.begin(), t.begin() + kReps / 2, t.end());
  return t[kReps / 2];
}

Tensor random_on(Device d, const Shape& s, Rng& rng) {
  Tensor host = Tensor::empty(DType::f32, s);
  uniform_fill(host, -1, 1, rng);
  return to_device(host, d);
}

// Random weights on the symmetric i8 grid of scale 1/127 per channel (host).
Tensor grid_weights(const Shape& s, Rng& rng, std::vector<float>& scales) {
  Tensor w = Tensor::empty(DType::f32, s);
  uniform_fill(w, -1, 1, rng);
  const float scale = 1.f / 127.f;
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data<float>()[i] = std::nearbyint(w.data<float>()[i] * 127.f) * scale;
  scales.assign(size_t(s[0]), scale);
  return w;
}

// Forward + backward of `rows` output channels on x's device (random
// weights); with `ints` (host only), the forward on integers as the split
// runs it under quantization-aware training (x is the real, on-grid input).
double layer_seconds(const ChannelSplit& s, const Tensor& x, int64_t rows, const DeviceLink& link,
                     Rng& rng, std::optional<HostIntegers> ints = {}) {
  Shape ws = s.full_weight().shape();
  ws[0] = rows;
  const ChannelOp& op = s.op();
  const TrainBackend& be = train_backend(x.device());
  Tensor w = random_on(x.device(), ws, rng), b = random_on(x.device(), {rows}, rng);
  if (ints) w = grid_weights(ws, rng, ints->q.w_scales);
  Tensor y = empty_f32(be, op.output_shape(x.shape(), ws));
  Tensor dx = empty_f32(be, x.shape()), dw = empty_f32(be, ws), db = empty_f32(be, {rows});
  return seconds_of(link, [&] {
    const bool integers =
        ints && be.qconv2d_forward && be.qconv2d_forward(be.ctx, op.conv, ints->q, x, w, b, y);
    if (!integers) op.forward(be, x, w, b, y);
    op.backward(be, x, w, y, {dx, GradMode::overwrite}, {dw, GradMode::overwrite}, {db, GradMode::overwrite});
  });
}

// x on the u8 grid of its own range, as a fresh input quantizer puts it,
// with that grid in `q`: the host's integer forward measured before the
// layer's quantizer has seen data.
Tensor on_own_grid(const Tensor& x, ops::QConvParams& q) {
  FakeQuantizer in;
  Tensor g = in(Var(x), true).value();
  const auto [scale, zero_point] = in.qparams();
  q.x_scale = scale.data<float>()[0];
  q.x_zero_point = zero_point.data<int64_t>()[0];
  return g;
}

// Forward + backward of the CPU side's `rows` channels on x_host, in the
// faster of float and (where the layer can) integers, which it keeps.
double cpu_side_seconds(ChannelSplit& s, const Tensor& x_host, int64_t rows, const DeviceLink& link,
                        Rng& rng) {
  const double t_float = layer_seconds(s, x_host, rows, link, rng);
  if (!s.integer_host(s.quant())) return t_float;
  // Integers win on wide layers and lose on narrow ones (the conversions in
  // and out cost more than the narrow sums save).
  HostIntegers ints;
  const double t_int8 = layer_seconds(s, on_own_grid(x_host, ints.q), rows, link, rng, ints);
  s.set_host_integers(t_int8 < t_float);
  return std::min(t_float, t_int8);
}

}  // namespace

void choose_cpu_form(ChannelSplit& s, const Tensor& x) {
  const int64_t rows = s.rows() - s.home_rows();
  if (rows == 0 || !s.integer_host(s.quant())) return;
  TANDEM_ZONE_CAT("split cpu form", "split");
  Rng rng(7);
  cpu_side_seconds(s, s.link().to_host(x)->wait(), rows, s.link(), rng);
}

void tune_split(ChannelSplit& s, const Tensor& x) {
  TANDEM_ZONE_CAT("split tune", "split");
  const DeviceLink& link = s.link();
  Rng rng(7);
  SplitMeasurement m;
  for (double r : {1.0, 0.75, 0.5, 0.25}) {
    int64_t rows = home_rows_for(r, s.rows(), s.step());
    bool seen = std::any_of(m.home.begin(), m.home.end(), [&](const auto& p) { return p.first == double(rows) / double(s.rows()); });
    if (rows > 0 && !seen) m.home.emplace_back(double(rows) / double(s.rows()), layer_seconds(s, x, rows, link, rng));
  }
  const Tensor x_host = link.to_host(x)->wait();
  m.host_all = cpu_side_seconds(s, x_host, s.rows(), link, rng);
  if (link.copies()) {
    Tensor y = link.host_empty(s.op().output_shape(x.shape(), s.full_weight().shape()));
    Tensor dx = link.host_empty(x.shape());
    m.copy_fixed = seconds_of(link, [&] {
      link.to_host(x)->wait();
      link.to_home(dx);
    });
    m.copy_all = seconds_of(link, [&] {
      Tensor on_home = link.to_home(y);
      link.to_host(on_home)->wait();
    });
  }
  SplitChoice c = choose_split(m, s.rows(), s.step(), kMinGain);
  SplitTiming& t = s.timing;
  t.tuned = true;
  t.input_shape = shape_str(x.shape());
  t.t_home = predicted_home(m, 1);
  t.t_host = predicted_host(m, 0);
  t.t_split = t.t_home;
  s.set_home_rows(c.home_rows);
  if (c.home_rows < s.rows()) {
    // The split as it will run, measured: kept only when it really wins.
    Var xv(x, true);
    t.t_split = seconds_of(link, [&] {
      Var y = s.forward(xv, s.quant());
      backward(y, y.value());
    });
    s.zero_grad();  // the measurement accumulated into the parameters' gradients
    if (t.t_split > (1 - kMinGain) * t.t_home) {
      s.set_home_rows(s.rows());
      t.t_split = t.t_home;
    }
  }
  const std::string label = fmt::format("split {} cpu share {:.3f}: gpu {:.3f} ms cpu {:.3f} ms split {:.3f} ms",
                                        s.name(), 1 - s.r(), t.t_home * 1e3, t.t_host * 1e3, t.t_split * 1e3);
  TANDEM_ZONE_AT(profile::dynamic_location(label, "split"));
}

}  // namespace tandem::train
