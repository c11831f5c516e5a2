// CUDA Pad (constant, reflect, edge, wrap; negative pads crop) and Slice
// (any steps, negative ones too) vs the CPU backend (itself checked against
// ONNX's node tests and numpy): both only move values, so the results must
// be identical for every dtype, at every precision, on plain inputs and on
// nhwc ones (a 1x1 MaxPool first, an exact copy, makes the input arrive in
// the layout CUDA convolutions produce).
#include <string>
#include <vector>

#include "../graph_builder.h"
#include "gpu_test_util.h"

namespace tandem::testing {
namespace {

Tensor i64s(const std::vector<int64_t>& v) { return Tensor::from_vector(v, {int64_t(v.size())}); }

ValueId maybe_nhwc(GraphBuilder& b, ValueId x, bool nhwc) {
  if (!nhwc) return x;
  Attributes pool;
  pool.set("kernel_shape", Shape{1, 1});
  return b.node("MaxPool", {x}, pool);
}

struct PadCase {
  std::string mode;
  std::vector<int64_t> pads;
};

TEST(CudaPad, EveryModePlainAndNhwc) {
  TANDEM_REQUIRE_GPU();
  const Shape in = {2, 5, 6, 7};
  const PadCase cases[] = {
      {"constant", {0, 0, 1, 2, 0, 0, 3, 1}},
      {"constant", {0, 3, 0, 0, 0, 5, 0, 0}},  // channels, as BlazeFace
      {"constant", {1, 0, -1, 2, 0, 1, 2, -3}},
      {"reflect", {0, 0, 2, 3, 0, 0, 4, 5}},
      {"reflect", {0, 2, 5, 6, 0, 1, 7, 9}},
      {"edge", {0, 1, 3, 0, 1, 0, 2, 4}},
      {"wrap", {0, 0, 2, 8, 0, 0, 9, 1}},
  };
  uint32_t seed = 1;
  for (const PadCase& c : cases)
    for (bool nhwc : {false, true})
      for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16}) {
        GraphBuilder b;
        Attributes a;
        a.set("mode", c.mode);
        ValueId x = maybe_nhwc(b, b.input("x", in), nhwc);
        ValueId value = b.constant("value", Tensor::from_vector<float>({2.5f}, {}));
        std::vector<ValueId> args = {x, b.constant("pads", i64s(c.pads))};
        if (c.mode == "constant") args.push_back(value);
        b.output(b.node("Pad", args, a));
        auto [cpu, gpu] = run_both(b.g, {random_for(p, in, seed++)}, p);
        std::string at = c.mode + " " + shape_str(Shape(c.pads.begin(), c.pads.end())) +
                         (nhwc ? " nhwc " : " plain ");
        expect_identical(gpu[0], cpu[0], at + precision_name(p));
      }
}

// Pad of integers (a constant of zero: no value input), and of a 3-D tensor
// with a fill fed at run time.
TEST(CudaPad, IntegersAndRuntimeFill) {
  TANDEM_REQUIRE_GPU();
  {
    GraphBuilder b;
    ValueId x = b.input("x", {4, 30}, DType::i64);
    b.output(b.node("Pad", {x, b.constant("pads", i64s({1, 2, 3, 0}))}));
    Tensor t = Tensor::empty(DType::i64, {4, 30});
    for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = (i * 7919) % 1000 - 500;
    auto [cpu, gpu] = run_both(b.g, {t});
    expect_identical(gpu[0], cpu[0], "Pad int64");
  }
  {
    GraphBuilder b;
    ValueId x = b.input("x", {3, 4, 9}), v = b.input("v", {});
    b.output(b.node("Pad", {x, b.constant("pads", i64s({0, 1, 2, 1, 0, 3})), v}));
    auto [cpu, gpu] =
        run_both(b.g, {random_f32({3, 4, 9}, 5), Tensor::from_vector<float>({-7.f}, {})});
    expect_identical(gpu[0], cpu[0], "Pad with a fed value");
  }
}

struct SliceCase {
  std::vector<int64_t> starts, ends, axes, steps;
};

TEST(CudaSlice, StepsAxesPlainAndNhwc) {
  TANDEM_REQUIRE_GPU();
  const Shape in = {3, 8, 9, 10};
  const SliceCase cases[] = {
      {{0, 1}, {2, 7}, {0, 2}, {1, 2}},
      {{-1}, {-1000}, {3}, {-1}},  // reversed W
      {{7, 8, 0}, {0, 1, 100}, {1, 2, 3}, {-2, -3, 4}},
      {{1, 0, 2, 3}, {3, 8, 9, 4}, {0, 1, 2, 3}, {1, 3, 1, 1}},
      {{2}, {5}, {1}, {1}},  // channels, as StridedSlice of NHWC imports
  };
  uint32_t seed = 20;
  for (const SliceCase& c : cases)
    for (bool nhwc : {false, true})
      for (Precision p : {Precision::fp32, Precision::fp16, Precision::bf16}) {
        GraphBuilder b;
        ValueId x = maybe_nhwc(b, b.input("x", in), nhwc);
        b.output(b.node("Slice",
                        {x, b.constant("starts", i64s(c.starts)), b.constant("ends", i64s(c.ends)),
                         b.constant("axes", i64s(c.axes)), b.constant("steps", i64s(c.steps))}));
        auto [cpu, gpu] = run_both(b.g, {random_for(p, in, seed++)}, p);
        std::string at = "starts " + shape_str(Shape(c.starts.begin(), c.starts.end())) +
                         (nhwc ? " nhwc " : " plain ");
        expect_identical(gpu[0], cpu[0], at + precision_name(p));
      }
}

TEST(CudaSlice, IntegerRowsAndColumns) {
  TANDEM_REQUIRE_GPU();
  GraphBuilder b;
  ValueId x = b.input("x", {2, 100, 3}, DType::i32);
  b.output(b.node("Slice", {x, b.constant("s", i64s({0, 2})), b.constant("e", i64s({100, 3})),
                            b.constant("a", i64s({1, 2})), b.constant("t", i64s({3, 1}))}));
  Tensor t = Tensor::empty(DType::i32, {2, 100, 3});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int32_t>()[i] = int32_t(i * 31 - 2000);
  auto [cpu, gpu] = run_both(b.g, {t});
  expect_identical(gpu[0], cpu[0], "Slice int32");
}

}  // namespace
}  // namespace tandem::testing
