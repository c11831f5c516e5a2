// Training throughput on a GPU: whole optimizer steps (forward, cross-entropy,
// backward, SGD with momentum, and in fp16 the loss scaler) of ResNet-18 on a
// synthetic 224x224 batch already on the GPU, and of the small Fashion-MNIST CNN on
// 28x28, through the same Trainer::train_step `tandem train` runs (so the
// step includes its per-step loss read-back). Peer: bench/train_throughput.py
// runs this and PyTorch (torchvision ResNet-18, AMP, channels-last) in one
// go and prints the ratio.
//   bench_train_gpu --benchmark_filter=Resnet18
// With TANDEM_BENCH_PROFILE=DIR each case first runs 5 steps under the
// profiler (kernels timed by CUPTI) into DIR/<arch>-b<batch>-p<precision>/,
// outside the timed loop.
// Without a GPU every case reports "no CUDA GPU" and the program exits 0.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "profile/session.h"
#include "train/device_tensor.h"
#include "train/models/models.h"
#include "train/optim/sgd.h"
#include "train/trainer.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/context.h"
#endif

using namespace tandem;
using namespace tandem::train;

namespace {

bool have_gpu() {
#ifdef TANDEM_HAVE_CUDA
  return cuda::device_count() > 0;
#else
  return false;
#endif
}

// precision: 0 fp32, 1 fp16 (autocast, loss scaling), 2 bf16 (autocast).
// nhwc: channels-last activations (TrainerOptions::channels_last).
void train_steps(benchmark::State& state, const std::string& arch, const ModelConfig& mc,
                 int64_t batch, int64_t precision, bool nhwc = false) {
  if (!have_gpu()) {
    state.SkipWithError("no CUDA GPU");
    return;
  }
  const Device gpu = Device::cuda(0);
  Rng rng(1);
  auto model = make_model(arch, mc, rng);
  model->to(gpu);
  Sgd opt(model->parameters(), SgdOptions{.lr = 0.01, .momentum = 0.9});
  TrainerOptions o;
  if (precision == 1) o.autocast = DType::f16, o.loss_scaling = LossScalerOptions{};
  if (precision == 2) o.autocast = DType::bf16;
  o.channels_last = nhwc;
  Trainer trainer(*model, opt, LrSchedule::constant(0.01), o);
  Tensor x = Tensor::empty(DType::f32, {batch, mc.channels, mc.height, mc.width});
  uniform_fill(x, -1, 1, rng);
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int64_t(i) % mc.classes;
  Batch b{to_device(x, gpu), Tensor::from_vector(labels, {batch}), 0, 0};
  for (int i = 0; i < 3; ++i) trainer.train_step(b);  // algorithm searches, pool growth
  if (const char* dir = std::getenv("TANDEM_BENCH_PROFILE")) {
    const std::string out = std::string(dir) + "/" + arch + "-b" + std::to_string(batch) + "-p" +
                            std::to_string(precision) + (nhwc ? "-nhwc" : "");
    profile::TraceSession trace(profile::SessionOutputs{"", out});
    for (int i = 0; i < 5; ++i) trainer.train_step(b);
    trace.finish();
  }
  int64_t skipped = 0;
  for (auto _ : state) skipped += trainer.train_step(b).skipped;
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["skipped"] = double(skipped);
}

void BM_Resnet18Step(benchmark::State& state) {
  train_steps(state, "resnet18", ModelConfig{3, 224, 224, 1000, 0}, state.range(0), state.range(1),
              state.range(2) != 0);
}
BENCHMARK(BM_Resnet18Step)
    ->ArgNames({"batch", "precision", "nhwc"})
    ->Args({256, 1, 1})
    ->Args({256, 2, 1})
    ->Args({256, 1, 0})
    ->Args({256, 2, 0})
    ->Args({256, 0, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(3.0);

void BM_SmallCnnStep(benchmark::State& state) {
  train_steps(state, "cnn", ModelConfig{}, state.range(0), state.range(1));
}
BENCHMARK(BM_SmallCnnStep)
    ->ArgNames({"batch", "precision"})
    ->Args({128, 0})
    ->Args({128, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

}  // namespace
BENCHMARK_MAIN();
