// One fp32 training step (forward, cross-entropy, backward) on the CPU
// training table: the small Fashion-MNIST CNN (train/models: conv32-
// BN-ReLU-pool, conv64-BN-ReLU-pool, fc128, dropout, fc10) on a 28x28 batch,
// and a ResNet BasicBlock stage. No optimizer step (train/optim is separate).
#include <benchmark/benchmark.h>

#include "train/functional.h"
#include "train/layers.h"
#include "train/models/models.h"

using namespace tandem;
using namespace tandem::train;

namespace {

Tensor batch(const Shape& s) {
  Tensor t = Tensor::empty(DType::f32, s);
  Rng rng(3);
  uniform_fill(t, -1, 1, rng);
  return t;
}

void step(benchmark::State& state, Sequential& net, const Shape& input, int64_t classes) {
  Tensor x = batch(input);
  std::vector<int64_t> l(static_cast<size_t>(input[0]));
  for (size_t i = 0; i < l.size(); ++i) l[i] = int64_t(i) % classes;
  Tensor labels = Tensor::from_vector(l, {input[0]});
  for (auto _ : state) backward(cross_entropy(net(Var(x)), labels));
  state.SetItemsProcessed(state.iterations() * input[0]);
}

void BM_SmallCnnStep(benchmark::State& state) {
  Rng rng(1);
  auto net = make_cnn(ModelConfig{}, rng);
  step(state, *net, {state.range(0), 1, 28, 28}, 10);
}
// Batch 1: mostly the framework's own cost per op (tape, allocation, dispatch).
BENCHMARK(BM_SmallCnnStep)->Arg(128)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_BasicBlockStep(benchmark::State& state) {
  Rng rng(1);
  Sequential net;
  net.emplace<BasicBlock>(16, 32, 2, rng);
  net.emplace<BasicBlock>(32, 32, 1, rng);
  net.emplace<GlobalAvgPool2d>();
  net.emplace<Flatten>();
  net.emplace<Linear>(32, 10, true, rng);
  step(state, net, {state.range(0), 16, 32, 32}, 10);
}
BENCHMARK(BM_BasicBlockStep)->Arg(128)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
BENCHMARK_MAIN();
