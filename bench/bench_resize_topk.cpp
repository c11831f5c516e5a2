// Kernel run time (prepared once, as the executor does) of the ops a TF.js
// importer maps its upsampling and detection heads onto:
//   Resize linear x2 of a 1x128x64x64 f32 tensor, plain and nChw16c, in the
//   TF conventions (asymmetric, half_pixel) and align_corners;
//   Resize nearest x2 of the same tensor;
//   TopK k=100 of a 1x(128*128*80) f32 row (a detector's class scores).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/memory.h"
#include "cpu/cpu_backend.h"
#include "graph/op_eval.h"
#include "ops/schema.h"

using namespace tandem;

namespace {

Tensor random_f32(const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::empty(DType::f32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Prepares `op` on the CPU backend for `inputs` (`constant` marks constant
// inputs) and times kernel runs only.
void time_kernel(benchmark::State& state, const std::string& op, const Attributes& attrs,
                 std::vector<Tensor> inputs, const std::vector<bool>& constant, int opset, Layout layout) {
  Backend& cpu = cpu::cpu_backend();
  if (layout != Layout::plain) inputs[0] = reorder_tensor(cpu, inputs[0], layout);
  ops::InferContext ic;
  ic.op_type = op;
  ic.node = op;
  ic.attrs = &attrs;
  ic.opset = opset;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ic.inputs.push_back(inputs[i].defined() ? inputs[i].desc() : TensorDesc{});
    ic.present.push_back(inputs[i].defined());
    ic.constants.push_back(inputs[i].defined() && constant[i] ? &inputs[i] : nullptr);
  }
  ic.num_outputs = op == "TopK" ? 2 : 1;
  OpDesc d;
  d.op_type = op;
  d.node = op;
  d.attrs = &attrs;
  d.opset = opset;
  d.inputs = ic.inputs;
  d.present = ic.present;
  d.constants = ic.constants;
  d.outputs = ops::infer_outputs(ic);
  KernelPlan plan = cpu.prepare(d);
  if (plan.input_layouts[0] != layout) state.SkipWithError("kernel asked for another input layout");
  std::vector<Tensor> outs;
  std::vector<void*> out_ptrs;
  for (size_t i = 0; i < d.outputs.size(); ++i) {
    TensorDesc od = d.outputs[i];
    od.layout = plan.output_layouts[i];
    outs.push_back(Tensor::empty(od));
    out_ptrs.push_back(outs.back().raw());
  }
  std::vector<const void*> in_ptrs;
  for (const Tensor& t : inputs) in_ptrs.push_back(t.defined() ? t.raw() : nullptr);
  std::vector<char> scratch(plan.kernel->scratch_bytes() + kHostAlignment);
  RunContext ctx{scratch.data(), scratch.size()};
  for (auto _ : state) plan.kernel->run(in_ptrs.data(), out_ptrs.data(), ctx);
}

void resize_x2(benchmark::State& state, const char* mode, const char* coordinate, Layout layout) {
  Attributes a;
  a.set("mode", std::string(mode));
  a.set("coordinate_transformation_mode", std::string(coordinate));
  Tensor sizes = Tensor::from_vector(std::vector<int64_t>{1, 128, 128, 128}, {4});
  time_kernel(state, "Resize", a, {random_f32({1, 128, 64, 64}, 1), Tensor(), Tensor(), sizes},
              {false, true, true, true}, 13, layout);
}

void BM_ResizeLinearAsymmetric(benchmark::State& s) { resize_x2(s, "linear", "asymmetric", Layout::plain); }
void BM_ResizeLinearHalfPixel(benchmark::State& s) { resize_x2(s, "linear", "half_pixel", Layout::plain); }
void BM_ResizeLinearAlignCorners(benchmark::State& s) { resize_x2(s, "linear", "align_corners", Layout::plain); }
void BM_ResizeLinearHalfPixelBlocked16(benchmark::State& s) {
  resize_x2(s, "linear", "half_pixel", Layout::blocked16);
}
void BM_ResizeNearestAsymmetric(benchmark::State& s) { resize_x2(s, "nearest", "asymmetric", Layout::plain); }

void BM_TopK100Of1310720(benchmark::State& state) {
  Attributes a;
  Tensor k = Tensor::from_vector(std::vector<int64_t>{100}, {1});
  time_kernel(state, "TopK", a, {random_f32({1, 128 * 128 * 80}, 2), k}, {false, true}, 11, Layout::plain);
}

BENCHMARK(BM_ResizeLinearAsymmetric)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ResizeLinearHalfPixel)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ResizeLinearAlignCorners)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ResizeLinearHalfPixelBlocked16)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ResizeNearestAsymmetric)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TopK100Of1310720)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
