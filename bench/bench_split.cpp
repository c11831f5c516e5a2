// The heterogeneous split (train/split) over layer shapes and batch sizes:
// forward + backward of one conv 3x3 (C -> C, padding 1) or linear layer with
// its activations on the GPU, timed (median of reps, GPU synchronized) as
//   gpu:   all on the GPU (CPU share 0)
//   cpu:   all on the CPU (CPU share 1; x, y, dy and dx copied)
//   auto:  the tuner's choice (train/split/tuner.h), timed in alternation with gpu
// ("auto c" and "best c": the CPU's share of the channels).
//   best:  the best CPU share of a grid of eighths
// and the ratios best-single / split-best and best-single / auto (above 1:
// the split is faster). The aim: >= 1.2x where the two devices are
// within 3x of each other, and auto never more than 3% slower than the best
// single device.
//   bench_split            (needs a CUDA GPU; prints "no GPU" and exits 0 without one)
//   bench_split --cpu-only (both sides on the CPU: the mechanism, not a speedup)
//   bench_split --quick    (fewer shapes)
//   bench_split --qat [--cpu-only]
//     quantization-aware training's conv layers wholly on the CPU side
//     (x on its input quantizer's grid): the CPU's forward in float against
//     on integers (train/split/split_op.h's HostIntegers), and forward +
//     backward (the backward stays float), with the ratios float / integers.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "train/device_tensor.h"
#include "train/layers.h"
#include "train/split/device_link.h"
#include "train/split/place.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/context.h"
#endif

using namespace tandem;
using namespace tandem::train;

namespace {

struct Case {
  std::string name;
  bool conv = true;
  int64_t in = 0, out = 0, hw = 0;  // conv: channels, spatial size; linear: K -> M
};

std::unique_ptr<Module> make_layer(const Case& c) {
  Rng rng(1);
  if (c.conv) return std::make_unique<Conv2d>(c.in, c.out, 3, Conv2dOptions{.padding = 1}, rng);
  return std::make_unique<Linear>(c.in, c.out, true, rng);
}

Shape input_shape(const Case& c, int64_t n) { return c.conv ? Shape{n, c.in, c.hw, c.hw} : Shape{n, c.in}; }

Tensor random_on(const Shape& s, Device d) {
  Tensor t = Tensor::empty(DType::f32, s);
  Rng rng(2);
  uniform_fill(t, -1, 1, rng);
  return to_device(t, d);
}

// Forward + backward (dy = y) of `layer` on x, synchronized: seconds.
double run_once(Module& layer, const Tensor& x, const DeviceLink& link) {
  auto start = std::chrono::steady_clock::now();
  Var y = layer(Var(x, true));
  backward(y, y.value());
  link.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Median seconds of each layer of `layers` on x, measured in rounds (one run
// of each per round, so drift of the clocks or the machine burdens all
// alike) after two warm-up rounds, for at least `reps` rounds and ~50 ms of
// each layer: a sub-millisecond layer's single runs scatter by tens of
// percent (launch latency, clocks).
std::vector<double> time_layers(const std::vector<Module*>& layers, const Tensor& x, const DeviceLink& link,
                                int reps) {
  for (int i = 0; i < 2; ++i)
    for (Module* l : layers) run_once(*l, x, link);
  std::vector<std::vector<double>> t(layers.size());
  double least = 0;  // the least total time of any layer so far
  while (int(t[0].size()) < reps || (least < 0.05 && t[0].size() < 400)) {
    least = 1e30;
    for (size_t k = 0; k < layers.size(); ++k) {
      t[k].push_back(run_once(*layers[k], x, link));
      double total = 0;
      for (double v : t[k]) total += v;
      least = std::min(least, total);
    }
  }
  std::vector<double> out;
  for (auto& v : t) out.push_back(median(v));
  return out;
}

double time_layer(Module& layer, const Tensor& x, const DeviceLink& link, int reps) {
  return time_layers({&layer}, x, link, reps).front();
}

double at_ratio(const Case& c, const Tensor& x, Device home, double r, int reps) {
  std::unique_ptr<Module> layer = make_layer(c);
  place_hetero(*layer, home, SplitSetting{false, r});
  return time_layer(*layer, x, DeviceLink(home), reps);
}

std::vector<Case> cases(bool quick) {
  std::vector<Case> r;
  for (int64_t hw : {32, 16, 8, 56})
    for (int64_t ch : {16, 32, 64, 128, 256}) {
      if (hw == 56 && ch > 64) continue;  // minutes per row on the CPU
      if (quick && (ch == 16 || ch == 128 || hw == 56)) continue;
      r.push_back({fmt::format("conv3x3 {}->{} {}x{}", ch, ch, hw, hw), true, ch, ch, hw});
    }
  for (auto [k, m] : std::vector<std::pair<int64_t, int64_t>>{{512, 1000}, {2048, 1000}, {3136, 128}, {4096, 4096}})
    if (!quick || k == 512) r.push_back({fmt::format("linear {}->{}", k, m), false, k, m, 0});
  return r;
}

// Seconds of a forward alone (median of rounds, synchronized).
double forward_seconds(Module& layer, const Tensor& x, const DeviceLink& link, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps + 2; ++i) {
    auto start = std::chrono::steady_clock::now();
    Var y = layer(Var(x));
    link.synchronize();
    if (i >= 2)
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median(t);
}

// A conv under quantization-aware training, all of it on the CPU side, its
// host forward on integers or in float; `in` put x on its grid.
std::unique_ptr<Conv2d> qat_conv(const Case& c, Device home, const FakeQuantize& in,
                                 bool integers) {
  Rng rng(1);
  auto conv = std::make_unique<Conv2d>(c.in, c.out, 3, Conv2dOptions{.padding = 1}, rng);
  conv->enable_qat();
  place_hetero(*conv, home, SplitSetting{false, 0});
  conv->wire_input_grids(&in);
  conv->channel_split()->set_host_integers(integers);
  return conv;
}

void qat_table(Device home, bool quick) {
  fmt::print("{:<26} {:>5} {:>12} {:>12} {:>7} {:>14} {:>14} {:>7}\n", "layer (cpu share 1)",
             "batch", "fwd float ms", "fwd int8 ms", "ratio", "fwd+bwd float", "fwd+bwd int8",
             "ratio");
  const DeviceLink link(home);
  for (const Case& c : cases(quick)) {
    if (!c.conv) continue;
    for (int64_t n : quick ? std::vector<int64_t>{8, 32} : std::vector<int64_t>{8, 32, 128}) {
      FakeQuantize in;
      Var x = in(Var(random_on(input_shape(c, n), home)));  // observed: its grid is x's
      in.eval();
      auto f = qat_conv(c, home, in, false), q = qat_conv(c, home, in, true);
      const std::vector<double> both = time_layers({f.get(), q.get()}, x.value(), link, 5);
      const double ff = forward_seconds(*f, x.value(), link, 5),
                   fq = forward_seconds(*q, x.value(), link, 5);
      const bool ran = q->channel_split()->timing.host_int8;
      fmt::print("{:<26} {:>5} {:>12.3f} {:>12.3f} {:>6.2f}x {:>14.3f} {:>14.3f} {:>6.2f}x{}\n",
                 c.name, n, ff * 1e3, fq * 1e3, ff / fq, both[0] * 1e3, both[1] * 1e3,
                 both[0] / both[1], ran ? "" : "  (int8 declined)");
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool cpu_only = false, quick = false, qat = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--cpu-only")) cpu_only = true;
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--qat"))
      qat = true;
    else {
      fmt::print(stderr, "usage: bench_split [--cpu-only] [--quick] [--qat]\n");
      return 2;
    }
  }
  int gpus = 0;
#ifdef TANDEM_HAVE_CUDA
  gpus = cuda::device_count();
#endif
  if (gpus == 0 && !cpu_only) {
    fmt::print("no GPU: nothing to split against (bench_split --cpu-only shows the mechanism with both sides on the CPU)\n");
    return 0;
  }
  const Device home = cpu_only ? Device::cpu() : Device::cuda(0);
  if (qat) {
    qat_table(home, quick);
    return 0;
  }
  const std::vector<int64_t> batches = quick ? std::vector<int64_t>{8, 32} : std::vector<int64_t>{8, 32, 128};
  fmt::print("{:<26} {:>5} {:>9} {:>9} {:>6} {:>9} {:>6} {:>9} {:>10} {:>10}\n", "layer", "batch", "gpu ms", "cpu ms",
             "auto c", "auto ms", "best c", "best ms", "single/best", "single/auto");
  for (const Case& c : cases(quick)) {
    for (int64_t n : batches) {
      Tensor x = random_on(input_shape(c, n), home);
      // The GPU alone and the tuner's choice are timed in alternation: when
      // auto keeps the layer whole they are the same configuration, and
      // their ratio must show only the split's cost, not the machine's drift.
      std::unique_ptr<Module> gpu = make_layer(c), tuned = make_layer(c);
      place_hetero(*gpu, home, SplitSetting{false, 1});
      place_hetero(*tuned, home, SplitSetting{true, 1});
      prepare_split(*tuned, x);
      const double auto_r = split_summary(*tuned).front().r;
      const std::vector<double> pair = time_layers({gpu.get(), tuned.get()}, x, DeviceLink(home), 7);
      const double t_gpu = pair[0], t_auto = pair[1], t_cpu = at_ratio(c, x, home, 0, 3);
      double best_r = t_gpu <= t_cpu ? 1 : 0, t_best = std::min(t_gpu, t_cpu);
      const double single = t_best;
      for (int k = 1; k < 8; ++k) {
        double t = at_ratio(c, x, home, k / 8.0, 5);
        if (t < t_best) t_best = t, best_r = k / 8.0;
      }
      fmt::print("{:<26} {:>5} {:>9.3f} {:>9.3f} {:>6.3f} {:>9.3f} {:>6.3f} {:>9.3f} {:>10.2f}x {:>9.2f}x\n", c.name, n,
                 t_gpu * 1e3, t_cpu * 1e3, 1 - auto_r, t_auto * 1e3, 1 - best_r, t_best * 1e3, single / t_best,
                 single / t_auto);
      std::fflush(stdout);
    }
  }
  return 0;
}
