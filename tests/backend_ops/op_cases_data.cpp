// Data movement, shape and constant ops. Their reference is the CPU
// backend's result on the same inputs: nothing is computed, so every backend
// must agree exactly (an NMSE of 0 passes any tolerance).
#include "core/backend.h"
#include "core/dtype.h"
#include "tests/backend_ops/harness.h"
#include "tests/backend_ops/op_cases.h"

namespace tandem::backend_ops {

namespace {

Tensor ints(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(v, {int64_t(v.size())}); }

// Every third element set to zero (Cast to bool's false).
Tensor with_zeros(Tensor t) {
  for (int64_t i = 0; i < t.numel(); i += 3) t.data<float>()[i] = 0;
  return t;
}

// ONNX TensorProto codes of the Cast targets tried.
struct CastTarget {
  const char* label;
  int64_t onnx;
};

void add_cast_cases(std::vector<OpCase>& cases) {
  Seeds seed{5000};
  // From each float dtype (the case's dtypes) to each target: one round to
  // nearest even per narrowing, truncation to integers.
  for (CastTarget t : {CastTarget{"to-f32", 1}, CastTarget{"to-f16", 10}, CastTarget{"to-bf16", 16},
                       CastTarget{"to-i64", 7}, CastTarget{"to-i32", 6}})
    cases.push_back(
        OpCase("Cast", t.label).in(uniform({3, 77}, seed(), -300, 300)).attr("to", t.onnx));
  cases.push_back(OpCase("Cast", "to-bool")
                      .in(with_zeros(uniform({3, 4, 5}, seed(), -4, 4)))
                      .attr("to", int64_t(9)));
  cases.push_back(
      OpCase("Cast", "to-u8").in(uniform({3, 4, 5}, seed(), 0, 250)).attr("to", int64_t(2)));
  Tensor i64 = Tensor::empty(DType::i64, {3, 77});
  for (int64_t i = 0; i < i64.numel(); ++i) i64.data<int64_t>()[i] = (i * 7919) % 601 - 300;
  for (CastTarget t :
       {CastTarget{"i64-to-f32", 1}, CastTarget{"i64-to-bf16", 16}, CastTarget{"i64-to-f16", 10}})
    cases.push_back(OpCase("Cast", t.label).in(i64).attr("to", t.onnx));
  cases.push_back(OpCase("CastLike", "to-i64").in(uniform({3, 4}, seed(), -4, 4)).in(ints({0})));
}

void add_shape_cases(std::vector<OpCase>& cases) {
  Seeds seed{5100};
  cases.push_back(
      OpCase("Reshape", "flatten-tail").in(uniform({2, 4, 5}, seed())).constant_in(ints({-1, 20})));
  cases.push_back(
      OpCase("Reshape", "4d-to-2d").in(uniform({2, 3, 4, 5}, seed())).constant_in(ints({6, -1})));
  cases.push_back(
      OpCase("Unsqueeze", "axes0-3").in(uniform({2, 3, 4, 5}, seed())).constant_in(ints({0, 3})));
  cases.push_back(OpCase("Squeeze", "axes0-3")
                      .in(uniform({1, 2, 3, 1, 4, 5}, seed()))
                      .constant_in(ints({0, 3})));
  for (auto [x, perm] : {std::pair<Shape, std::vector<int64_t>>{{3, 4, 5}, {2, 0, 1}},
                         {{2, 3, 4, 5}, {3, 0, 2, 1}},
                         {{2, 3, 2, 3, 2, 3}, {5, 3, 1, 0, 2, 4}},
                         // innermost axis kept: moved in wide words (ViT's head split)
                         {{5, 6, 64}, {1, 0, 2}},
                         {{2, 3, 4, 6}, {0, 2, 1, 3}},
                         // extent-1 axes and neighbours that stay neighbours
                         {{1, 3, 1, 4}, {3, 1, 0, 2}},
                         {{2, 3, 4, 5, 3}, {3, 4, 0, 1, 2}}})
    cases.push_back(OpCase("Transpose", "perm" + shape_str(Shape(perm.begin(), perm.end())))
                        .in(uniform(x, seed()))
                        .attr("perm", perm));
  cases.push_back(
      OpCase("Flatten", "axis1").in(uniform({2, 3, 4, 5}, seed())).attr("axis", int64_t(1)));
  cases.push_back(OpCase("Squeeze", "axis1").in(uniform({3, 1, 4}, seed())).constant_in(ints({1})));
  cases.push_back(OpCase("Unsqueeze", "axis0").in(uniform({3, 4}, seed())).constant_in(ints({0})));
  cases.push_back(OpCase("Shape", "4d").in(uniform({2, 3, 4, 5}, seed())));
  cases.push_back(OpCase("Size", "4d").in(uniform({2, 3, 4, 5}, seed())));
  cases.push_back(OpCase("Transpose", "to-channels-last")
                      .in(uniform({2, 3, 4, 5}, seed()))
                      .attr("perm", std::vector<int64_t>{0, 2, 3, 1}));
  cases.push_back(OpCase("Transpose", "2d")
                      .in(uniform({17, 9}, seed()))
                      .attr("perm", std::vector<int64_t>{1, 0}));
  cases.push_back(
      OpCase("Expand", "broadcast").in(uniform({3, 1, 5}, seed())).constant_in(ints({2, 3, 4, 5})));
  cases.push_back(OpCase("Tile", "2x2").in(uniform({2, 3}, seed())).constant_in(ints({2, 2})));
  for (int64_t to : {int64_t(Layout::nhwc), int64_t(Layout::blocked8), int64_t(Layout::blocked16)})
    cases.push_back(OpCase(kReorderOp, std::string("to-") + std::string(layout_name(Layout(to))))
                        .in(uniform({2, 20, 5, 3}, seed()))
                        .attr("to_layout", to));
}

void add_copy_cases(std::vector<OpCase>& cases) {
  Seeds seed{5200};
  cases.push_back(OpCase("Concat", "channels")
                      .in(uniform({2, 3, 4, 5}, seed()))
                      .in(uniform({2, 5, 4, 5}, seed()))
                      .in(uniform({2, 1, 4, 5}, seed()))
                      .attr("axis", int64_t(1))
                      .channels_last());
  cases.push_back(OpCase("Concat", "int64-shape-vectors")
                      .in(ints({4, 5}))
                      .constant_in(ints({-1, 7, 9}))
                      .attr("axis", int64_t(0)));
  cases.push_back(OpCase("Gather", "rows-constant-int64")
                      .in(uniform({10, 7}, seed()))
                      .constant_in(ints({3, -1, 0, 9, 3})));
  cases.push_back(OpCase("Gather", "rows-int32-negative")
                      .in(uniform({10, 7}, seed()))
                      .in(Tensor::from_vector<int32_t>({1, 2, -3, 4}, {2, 2})));
  cases.push_back(OpCase("Gather", "channels-constant")
                      .in(uniform({2, 3, 4, 5}, seed()))
                      .constant_in(ints({2, -1, 0}))
                      .attr("axis", int64_t(1)));
  cases.push_back(OpCase("Concat", "last-axis")
                      .in(uniform({3, 4}, seed()))
                      .in(uniform({3, 7}, seed()))
                      .attr("axis", int64_t(-1)));
  cases.push_back(OpCase("Gather", "axis1-negative-index")
                      .in(uniform({5, 4, 3}, seed()))
                      .in(Tensor::from_vector<int64_t>({0, 3, -1, 2, 2, 1}, {2, 3}))
                      .attr("axis", int64_t(1)));
  cases.push_back(OpCase("Gather", "rows-i32")
                      .in(uniform({6, 8}, seed()))
                      .in(Tensor::from_vector<int32_t>({5, 0, 2}, {3})));
  cases.push_back(OpCase("ScatterND", "rows")
                      .in(uniform({4, 5}, seed()))
                      .constant_in(Tensor::from_vector<int64_t>({2, 0}, {2, 1}))
                      .in(uniform({2, 5}, seed())));
  cases.push_back(OpCase("Split", "channels")
                      .in(uniform({2, 5, 3, 3}, seed()))
                      .constant_in(ints({2, 3}))
                      .attr("axis", int64_t(1))
                      .outputs(2));
}

// Pad's modes, negative pads (crops) among them, and Slice's steps and
// axes, on 4-D activations that also arrive channels-last.
void add_pad_slice_cases(std::vector<OpCase>& cases) {
  struct Pad {
    const char* mode;
    std::vector<int64_t> pads;
  };
  Seeds seed{5250};
  for (const Pad& p :
       {Pad{"constant", {0, 0, 1, 2, 0, 0, 3, 1}}, Pad{"constant", {0, 3, 0, 0, 0, 5, 0, 0}},
        Pad{"constant", {1, 0, -1, 2, 0, 1, 2, -3}}, Pad{"reflect", {0, 0, 2, 3, 0, 0, 4, 5}},
        Pad{"reflect", {0, 2, 5, 6, 0, 1, 7, 9}}, Pad{"edge", {0, 1, 3, 0, 1, 0, 2, 4}},
        Pad{"wrap", {0, 0, 2, 8, 0, 0, 9, 1}}}) {
    OpCase c("Pad", std::string(p.mode) + "-" + shape_str(Shape(p.pads.begin(), p.pads.end())));
    c.in(uniform({2, 5, 6, 7}, seed(), -2, 2))
        .constant_in(ints(p.pads))
        .attr("mode", std::string(p.mode));
    if (std::string(p.mode) == "constant") c.constant_in(Tensor::from_vector<float>({2.5f}, {}));
    cases.push_back(c.channels_last());
  }
  Tensor i64 = Tensor::empty(DType::i64, {4, 30});
  for (int64_t i = 0; i < i64.numel(); ++i) i64.data<int64_t>()[i] = (i * 7919) % 1000 - 500;
  cases.push_back(OpCase("Pad", "int64-zero-fill").in(i64).constant_in(ints({1, 2, 3, 0})));
  cases.push_back(OpCase("Pad", "3d-runtime-fill")
                      .in(uniform({3, 4, 9}, seed()))
                      .constant_in(ints({0, 1, 2, 1, 0, 3}))
                      .in(Tensor::from_vector<float>({-7.f}, {})));
  struct Slice {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  for (const Slice& s :
       {Slice{{0, 1}, {2, 7}, {0, 2}, {1, 2}}, Slice{{-1}, {-1000}, {3}, {-1}},
        Slice{{7, 8, 0}, {0, 1, 100}, {1, 2, 3}, {-2, -3, 4}},
        Slice{{1, 0, 2, 3}, {3, 8, 9, 4}, {0, 1, 2, 3}, {1, 3, 1, 1}}, Slice{{2}, {5}, {1}, {1}}}) {
    cases.push_back(OpCase("Slice", "starts" + shape_str(Shape(s.starts.begin(), s.starts.end())) +
                                        "-steps" + shape_str(Shape(s.steps.begin(), s.steps.end())))
                        .in(uniform({3, 8, 9, 10}, seed(), -2, 2))
                        .constant_in(ints(s.starts))
                        .constant_in(ints(s.ends))
                        .constant_in(ints(s.axes))
                        .constant_in(ints(s.steps))
                        .channels_last());
  }
  Tensor i32 = Tensor::empty(DType::i32, {2, 100, 3});
  for (int64_t i = 0; i < i32.numel(); ++i) i32.data<int32_t>()[i] = int32_t(i * 31 - 2000);
  cases.push_back(OpCase("Slice", "int32-rows-columns")
                      .in(i32)
                      .constant_in(ints({0, 2}))
                      .constant_in(ints({100, 3}))
                      .constant_in(ints({1, 2}))
                      .constant_in(ints({3, 1})));
}

void add_constant_cases(std::vector<OpCase>& cases) {
  cases.push_back(OpCase("Constant", "tensor").attr("value", uniform({2, 3}, 5300)));
  cases.push_back(OpCase("ConstantOfShape", "f32")
                      .constant_in(ints({2, 3, 4}))
                      .attr("value", Tensor::from_vector<float>({1.5f}, {1})));
  cases.push_back(OpCase("Range", "i64")
                      .constant_in(Tensor::from_vector<int64_t>({2}, {}))
                      .constant_in(Tensor::from_vector<int64_t>({17}, {}))
                      .constant_in(Tensor::from_vector<int64_t>({3}, {})));
  cases.push_back(OpCase("Range", "f32")
                      .constant_in(Tensor::from_vector<float>({0.5f}, {}))
                      .constant_in(Tensor::from_vector<float>({4.f}, {}))
                      .constant_in(Tensor::from_vector<float>({0.25f}, {}))
                      .f32_only());
}

}  // namespace

void add_data_cases(std::vector<OpCase>& cases) {
  size_t first = cases.size();
  add_cast_cases(cases);
  add_shape_cases(cases);
  add_copy_cases(cases);
  add_pad_slice_cases(cases);
  add_constant_cases(cases);
  // Nothing here computes (a cast rounds to nearest even, one answer):
  // every backend must give the reference's very values.
  for (size_t i = first; i < cases.size(); ++i) cases[i].exact = true;
}

std::vector<OpCase> all_op_cases() {
  std::vector<OpCase> cases;
  add_math_cases(cases);
  add_nn_cases(cases);
  add_resize_cases(cases);
  add_topk_cases(cases);
  add_data_cases(cases);
  return cases;
}

}  // namespace tandem::backend_ops
