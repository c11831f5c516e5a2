// Transpose, Gather, Slice, Split, Expand, Tile, Pad on the CPU backend vs
// numpy (run through /usr/bin/python3, see tests/numpy_ref.h) or a naive loop
// written here. All of these move bytes, so every comparison is exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/half.h"
#include "tests/shape_test_util.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Tensor iota_i64(const Shape& s) {
  Tensor t = Tensor::empty(DType::i64, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = i * 7 - 100;
  return t;
}

// A naive loop as the reference: out[i0..i4] = x[idx permuted back].
TEST(DataMovement, Transpose5dMatchesNaiveLoop) {
  Tensor x = random_tensor({2, 3, 4, 5, 6}, 11);
  std::vector<int64_t> perm = {3, 0, 4, 2, 1};
  Tensor y = run("Transpose", attrs({{"perm", perm}}), {x})[0];
  ASSERT_EQ(y.shape(), (Shape{5, 2, 6, 4, 3}));
  std::vector<int64_t> xs = contiguous_strides(x.shape()), ys = contiguous_strides(y.shape());
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < 5; ++d) src += (i / ys[d] % y.shape()[d]) * xs[size_t(perm[d])];
    ASSERT_EQ(y.data<float>()[i], x.data<float>()[src]) << i;
  }
}

TEST(DataMovement, TransposeAnyDtypeVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor x = iota_i64({3, 1, 4, 2});
  Tensor y = run("Transpose", {}, {x})[0];  // default reverses
  ref.add(y, "r = x0.T", {x}, "default perm");
  Tensor h = Tensor::empty(DType::f16, {3, 5, 7});
  for (int64_t i = 0; i < h.numel(); ++i) static_cast<uint16_t*>(h.raw())[i] = float_to_f16(float(i) / 8);
  Tensor hy = run("Transpose", attrs({{"perm", std::vector<int64_t>{1, 2, 0}}}), {h})[0];
  ref.add(hy, "r = x0.transpose(1, 2, 0)", {h}, "f16");
  ref.check();
}

// NHWC <-> NCHW is a view in the channels-last layout: an image taken as
// NHWC before the first convolution, the heads turned back after the last
// (from a blocked layout through one reorder). Exact against numpy; an
// integer tensor oneDNN cannot reorder is still copied.
TEST(DataMovement, ChannelsLastTurnsAreViews) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  const Attributes to_nchw = attrs({{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
  const Attributes to_nhwc = attrs({{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  const TensorDesc image{DType::f32, {2, 7, 5, 3}, Layout::plain};
  EXPECT_EQ(planned_output_layout("Transpose", to_nchw, {image}), Layout::nhwc);
  EXPECT_EQ(planned_output_layout("Transpose", to_nhwc,
                                  {TensorDesc{DType::f32, {2, 32, 7, 5}, Layout::blocked16}}),
            Layout::plain);
  EXPECT_EQ(planned_output_layout("Transpose", to_nchw,
                                  {TensorDesc{DType::i64, {2, 7, 5, 3}, Layout::plain}}),
            Layout::plain);
  Tensor x = random_tensor(image.shape, 13);
  ref.add(run("Transpose", to_nchw, {x})[0], "r = x0.transpose(0, 3, 1, 2)", {x}, "NHWC to NCHW");
  Tensor heads = random_tensor({2, 32, 7, 5}, 14);
  for (Layout l : {Layout::plain, Layout::blocked16, Layout::nhwc}) {
    OpCall c = make_call("Transpose", to_nhwc, {heads}, {});
    c.input_layout = l;
    ref.add(run_op_cpu(c)[0], "r = x0.transpose(0, 2, 3, 1)", {heads},
            "NCHW to NHWC from " + std::string(layout_name(l)));
  }
  ref.check();
}

TEST(DataMovement, TransposeRejectsBadPerm) {
  Tensor x = random_tensor({2, 3, 4}, 12);
  for (std::vector<int64_t> p : {std::vector<int64_t>{0, 0, 1}, {0, 1}, {0, 1, 3}, {-1, 0, 1}, {0, 1, 2, 3}})
    EXPECT_THROW(run("Transpose", attrs({{"perm", p}}), {x}), Error) << shape_str(p);
}

TEST(DataMovement, GatherAnyAxisNegativeIndicesVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor x = random_tensor({3, 5, 4}, 13);
  Tensor idx = Tensor::from_vector<int64_t>({4, -1, 0, -5, 2, 2}, {2, 3});
  Tensor y = run("Gather", attrs({{"axis", int64_t(1)}}), {x, idx})[0];
  ref.add(y, "r = np.take(x0, x1, axis=1)", {x, idx}, "axis 1");
  Tensor idx32 = Tensor::from_vector<int32_t>({-1, 0}, {2});
  Tensor u = Tensor::empty(DType::u8, {4, 3});
  for (int64_t i = 0; i < 12; ++i) u.data<uint8_t>()[i] = uint8_t(i * 19);
  Tensor uy = run("Gather", attrs({{"axis", int64_t(-1)}}), {u, idx32})[0];
  ref.add(uy, "r = np.take(x0, x1, axis=-1)", {u, idx32}, "u8, i32 indices");
  Tensor scalar = Tensor::from_vector<int64_t>({-2}, {});
  Tensor sy = run("Gather", {}, {x, scalar})[0];
  ref.add(sy, "r = np.take(x0, x1, axis=0)", {x, scalar}, "scalar index");
  ref.check();
}

TEST(DataMovement, GatherOutOfRangeIndexThrowsAtRunTime) {
  Tensor x = random_tensor({3, 5}, 14);
  for (int64_t bad : {int64_t(5), int64_t(-6), kMax, kMin}) {
    OpCall c = op_call("Gather", attrs({{"axis", int64_t(1)}}), {x, Tensor::from_vector<int64_t>({0, bad}, {2})});
    EXPECT_THROW(run_op_cpu(c), Error) << bad;  // indices not constant: checked by the kernel
  }
  OpCall c = op_call("Gather", {}, {x, Tensor::from_vector<int32_t>({3}, {1})});
  EXPECT_THROW(run_op_cpu(c), Error);
  EXPECT_THROW(run("Gather", attrs({{"axis", int64_t(2)}}), {x, i64s({0})}), Error);
  EXPECT_THROW(run("Gather", {}, {x, Tensor::from_vector<float>({0.f}, {1})}), Error);
}

TEST(DataMovement, SliceNegativeStepsAndClampingVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor x = random_tensor({5, 6, 7, 4}, 15);
  struct Case { std::vector<int64_t> starts, ends, axes, steps; const char* numpy; };
  std::vector<Case> cases = {
      {{-1, kMax}, {kMin, -kMax}, {1, 2}, {-1, -2}, "x0[:, ::-1, ::-2, :]"},
      {{1, 100, -3}, {-1, -100, kMax}, {0, -2, 3}, {2, -3, 1}, "x0[1:-1:2, :, 100:-100:-3, -3:]"},
      {{10}, {20}, {0}, {1}, "x0[10:20]"},          // start past the end: empty
      {{-10}, {2}, {-1}, {1}, "x0[..., -10:2]"},    // start before 0 clamps
      {{3}, {3}, {1}, {-1}, "x0[:, 3:3:-1]"},       // empty with a negative step
      {{0, 0}, {kMax, kMax}, {3, 1}, {3, 4}, "x0[:, ::4, :, ::3]"},
  };
  for (const Case& c : cases) {
    Tensor y = run("Slice", {}, {x, i64s(c.starts), i64s(c.ends), i64s(c.axes), i64s(c.steps)})[0];
    ref.add(y, std::string("r = ") + c.numpy, {x}, c.numpy);
  }
  // Slice-1: starts/ends/axes as attributes.
  Attributes a = attrs({{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{-1}},
                        {"axes", std::vector<int64_t>{2}}});
  ref.add(run("Slice", a, {x}, 9)[0], "r = x0[:, :, 1:-1]", {x}, "Slice-1");
  ref.check();
}

TEST(DataMovement, SliceRejectsHostileArguments) {
  Tensor x = random_tensor({4, 4}, 16);
  EXPECT_THROW(run("Slice", {}, {x, i64s({0}), i64s({2}), i64s({0}), i64s({0})}), Error);   // step 0
  EXPECT_THROW(run("Slice", {}, {x, i64s({0}), i64s({2}), i64s({0}), i64s({kMin})}), Error);
  EXPECT_THROW(run("Slice", {}, {x, i64s({0, 0}), i64s({2, 2}), i64s({1, -1})}), Error);   // repeated axis
  EXPECT_THROW(run("Slice", {}, {x, i64s({0}), i64s({2}), i64s({2})}), Error);             // axis out of range
  EXPECT_THROW(run("Slice", {}, {x, i64s({0, 1}), i64s({2})}), Error);                     // length mismatch
}

TEST(DataMovement, SplitAttributeVsInputVsEqualParts) {
  Tensor x = iota_i64({2, 7});
  auto check_parts = [&](const std::vector<Tensor>& parts, std::vector<int64_t> sizes) {
    ASSERT_EQ(parts.size(), sizes.size());
    int64_t first = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      ASSERT_EQ(parts[k].shape(), (Shape{2, sizes[k]}));
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t j = 0; j < sizes[k]; ++j)
          ASSERT_EQ(parts[k].int_at(r * sizes[k] + j), x.int_at(r * 7 + first + j));
      first += sizes[k];
    }
  };
  Attributes axis1 = attrs({{"axis", int64_t(-1)}});
  Attributes split_attr = attrs({{"axis", int64_t(1)}, {"split", std::vector<int64_t>{2, 0, 5}}});
  check_parts(run("Split", split_attr, {x}, 11, 3), {2, 0, 5});
  check_parts(run("Split", axis1, {x, i64s({6, 1})}, 13, 2), {6, 1});
  // Split-18: uneven equal parts, last one smaller.
  Attributes n3 = attrs({{"axis", int64_t(1)}, {"num_outputs", int64_t(3)}});
  check_parts(run("Split", n3, {x}, 18, 3), {3, 3, 1});
  EXPECT_THROW(run("Split", axis1, {x}, 13, 3), Error);                  // 7 is not 3 equal parts
  EXPECT_THROW(run("Split", axis1, {x, i64s({3, 3})}, 13, 2), Error);    // sums to 6
  EXPECT_THROW(run("Split", axis1, {x, i64s({8, -1})}, 13, 2), Error);   // negative size
  EXPECT_THROW(run("Split", axis1, {x, i64s({7})}, 13, 2), Error);       // count mismatch
}

TEST(DataMovement, ExpandAndTileVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor x = random_tensor({3, 1, 2}, 17);
  Tensor e = run("Expand", {}, {x, i64s({2, 1, 4, 1})})[0];
  ref.add(e, "r = x0 * np.ones((2, 1, 4, 1), np.float32)", {x}, "Expand");
  Tensor b = Tensor::from_vector<uint8_t>({1, 0}, {2, 1});
  b = Tensor(TensorDesc{DType::boolean, {2, 1}}, b.storage());
  Tensor be = run("Expand", {}, {b, i64s({3})})[0];
  ref.add(be, "r = np.broadcast_to(x0, (2, 3))", {b}, "bool Expand");
  Tensor t = run("Tile", {}, {x, i64s({2, 3, 1})})[0];
  ref.add(t, "r = np.tile(x0, (2, 3, 1))", {x}, "Tile");
  EXPECT_EQ(run("Tile", {}, {x, i64s({0, 1, 1})})[0].numel(), 0);
  EXPECT_THROW(run("Tile", {}, {x, i64s({1, -1, 1})}), Error);
  EXPECT_THROW(run("Tile", {}, {x, i64s({1, 1})}), Error);
  EXPECT_THROW(run("Tile", {}, {x, i64s({kMax, kMax, 2})}), Error);
  EXPECT_THROW(run("Expand", {}, {x, i64s({4, 1, 2})}), Error);  // 3 vs 4 do not broadcast
  EXPECT_THROW(run("Expand", {}, {x, i64s({-3})}), Error);
  ref.check();
}

TEST(DataMovement, PadModesVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor x = random_tensor({2, 3, 4}, 18);
  // Pads larger than the extent make numpy reflect repeatedly.
  std::vector<int64_t> pads = {0, 4, 7, 1, 5, 2};
  const char* np_pads = "((0, 1), (4, 5), (7, 2))";
  // numpy's wrap with pads larger than the extent is not the torus ONNX
  // describes (it alternates sides); within the extent they agree.
  std::vector<int64_t> wrap_pads = {0, 2, 3, 1, 3, 4};
  const char* np_wrap_pads = "((0, 1), (2, 3), (3, 4))";
  for (const char* mode : {"reflect", "edge", "wrap"}) {
    bool wrap = std::string(mode) == "wrap";
    Tensor y = run("Pad", attrs({{"mode", std::string(mode)}}), {x, i64s(wrap ? wrap_pads : pads)})[0];
    std::string code = std::string("r = np.pad(x0, ") + (wrap ? np_wrap_pads : np_pads) + ", mode='" + mode + "')";
    ref.add(y, code, {x}, mode);
  }
  // Wrap beyond the extent: the torus, out[o] = x[(o - begin) mod n].
  Tensor w = run("Pad", attrs({{"mode", std::string("wrap")}}), {x, i64s(pads)})[0];
  ASSERT_EQ(w.shape(), (Shape{3, 12, 13}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 12; ++j)
      for (int64_t k = 0; k < 13; ++k)
        ASSERT_EQ(w.data<float>()[(i * 12 + j) * 13 + k],
                  x.data<float>()[((i % 2) * 3 + (j + 8) % 3) * 4 + (k + 9) % 4]) << i << "," << j << "," << k;
  // Constant mode with a run-time fill value and a negative (cropping) pad.
  OpCall c = op_call("Pad", {}, {x, i64s({1, -1, 0, 0, 2, -3}), Tensor::from_vector<float>({-9.5f}, {})});
  c.constant = {false, true, false};
  Tensor y = run_op_cpu(c)[0];
  ref.add(y, "r = np.pad(x0, ((1, 0), (0, 2), (0, 0)), constant_values=-9.5)[:, 1:, :1]", {x}, "constant");
  // Pad-2: pads and value as attributes.
  Attributes a = attrs({{"pads", std::vector<int64_t>{0, 0, 1, 0, 0, 1}}, {"value", 3.0f}});
  ref.add(run("Pad", a, {x}, 2)[0], "r = np.pad(x0, ((0, 0), (0, 0), (1, 1)), constant_values=3)", {x}, "Pad-2");
  ref.check();
}

TEST(DataMovement, PadRejectsHostileArguments) {
  Tensor x = random_tensor({2, 3}, 19);
  EXPECT_THROW(run("Pad", {}, {x, i64s({0, 0, 0})}), Error);               // wrong length
  EXPECT_THROW(run("Pad", {}, {x, i64s({0, -3, 0, -1})}), Error);          // crops below zero
  EXPECT_THROW(run("Pad", attrs({{"mode", std::string("mirror")}}), {x, i64s({0, 0, 0, 0})}), Error);
  EXPECT_THROW(run("Pad", {}, {x, i64s({0, kMax, 0, 0})}), Error);
  Tensor empty = Tensor::zeros(DType::f32, {0, 3});
  EXPECT_THROW(run("Pad", attrs({{"mode", std::string("reflect")}}), {empty, i64s({1, 0, 0, 0})}), Error);
  OpCall c = op_call("Pad", {}, {x, i64s({0, 0, 0, 0}), Tensor::from_vector<int64_t>({1}, {})});  // fill dtype
  c.constant = {false, true, true};
  EXPECT_THROW(run_op_cpu(c), Error);
}

}  // namespace

namespace {

// numpy reference: a python loop applying the same index tuples in order.
TEST(DataMovement, ScatterNdVsNumpy) {
  REQUIRE_NUMPY();
  NumpyChecks ref;
  Tensor data = random_tensor({4, 3, 5}, 20);
  Tensor idx = Tensor::from_vector<int64_t>({0, 1, 3, -1, -4, 0, 2, 2}, {2, 2, 2});
  Tensor upd = random_tensor({2, 2, 5}, 21);
  const char* loop =
      "r = x0.copy()\n"
      "for t, u in zip(x1.reshape(-1, 2), x2.reshape(-1, 5)):\n"
      "    r[tuple(t)] = OP";
  for (auto [red, op] : {std::pair{"none", "u"}, {"add", "r[tuple(t)] + u"}, {"mul", "r[tuple(t)] * u"},
                         {"max", "np.maximum(r[tuple(t)], u)"}, {"min", "np.minimum(r[tuple(t)], u)"}}) {
    OpCall c = op_call("ScatterND", attrs({{"reduction", std::string(red)}}), {data, idx, upd});
    std::string code = loop;
    code.replace(code.find("OP"), 2, op);
    ref.add(run_op_cpu(c)[0], code, {data, idx, upd}, red);
  }
  ref.check();
}

TEST(DataMovement, ScatterNdRejectsBadIndices) {
  Tensor data = random_tensor({4, 3}, 22);
  auto scatter = [&](std::vector<int64_t> idx, Shape idx_shape, Shape upd_shape) {
    OpCall c = op_call("ScatterND", {}, {data, Tensor::from_vector(idx, idx_shape), random_tensor(upd_shape, 23)});
    return run_op_cpu(c);
  };
  EXPECT_THROW(scatter({0, 4}, {2, 1}, {2, 3}), Error);       // 4 is past extent 4
  EXPECT_THROW(scatter({1, -5}, {2, 1}, {2, 3}), Error);
  EXPECT_THROW(scatter({0, 0, 0}, {1, 3}, {1}), Error);       // k = 3 > rank 2
  EXPECT_THROW(scatter({0, 1}, {2, 1}, {2, 4}), Error);       // updates shape
  EXPECT_NO_THROW(scatter({3, -4}, {2, 1}, {2, 3}));
}

}  // namespace
