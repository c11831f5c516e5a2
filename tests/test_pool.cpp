// MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool on the CPU backend vs
// a naive float64 loop written here from the ONNX definitions (max over taps
// inside the input; average over taps inside the input, or with
// count_include_pad over taps inside the explicitly padded input; ceil_mode
// output extents as PyTorch: the last window must start inside the input or
// its begin padding), in plain and nChw16c layouts, 1-D to 3-D.
// Tolerance: 1e-5 * max|ref| (sums of at most a few dozen taps).
#include <gtest/gtest.h>

#include <cmath>

#include "core/half.h"
#include "cpu/cpu_backend.h"
#include "ops/schema.h"
#include "tests/cpu_features.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

struct PoolCase {
  std::string op;
  Shape x = {};
  Shape kernel = {}, strides = {}, dilations = {}, pads = {};  // empty = ONNX default
  bool ceil = false, include_pad = false;
  std::string auto_pad = {};
};

OpCall make_call(const std::string& op, Attributes a, std::vector<Tensor> inputs) {
  OpCall c;
  c.op_type = op;
  c.attrs = std::move(a);
  c.inputs = std::move(inputs);
  return c;
}

Attributes pool_attrs(const PoolCase& p) {
  Attributes a;
  if (!p.kernel.empty()) a.set("kernel_shape", p.kernel);
  if (!p.strides.empty()) a.set("strides", p.strides);
  if (!p.dilations.empty()) a.set("dilations", p.dilations);
  if (!p.pads.empty()) a.set("pads", p.pads);
  if (p.ceil) a.set("ceil_mode", int64_t(1));
  if (p.include_pad) a.set("count_include_pad", int64_t(1));
  if (!p.auto_pad.empty()) a.set("auto_pad", p.auto_pad);
  return a;
}

Tensor reference_pool(const Tensor& x, const PoolCase& p) {
  size_t k = x.shape().size() - 2;
  bool global = p.op.rfind("Global", 0) == 0;
  bool is_max = p.op.find("Max") != std::string::npos;
  int64_t in[3] = {1, 1, 1}, ker[3] = {1, 1, 1}, st[3] = {1, 1, 1}, dl[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, out[3] = {1, 1, 1};
  for (size_t i = 0; i < k; ++i) {
    size_t j = 3 - k + i;
    in[j] = x.shape()[2 + i];
    ker[j] = global ? in[j] : p.kernel[i];
    if (!p.strides.empty()) st[j] = p.strides[i];
    if (!p.dilations.empty()) dl[j] = p.dilations[i];
    if (!p.pads.empty()) {
      pb[j] = p.pads[i];
      pe[j] = p.pads[k + i];
    }
    int64_t dk = (ker[j] - 1) * dl[j] + 1;
    if (p.auto_pad == "SAME_UPPER") {
      out[j] = (in[j] + st[j] - 1) / st[j];
      int64_t total = std::max<int64_t>(0, (out[j] - 1) * st[j] + dk - in[j]);
      pb[j] = total / 2;
      pe[j] = total - pb[j];
      continue;
    }
    int64_t span = in[j] + pb[j] + pe[j] - dk;
    out[j] = (p.ceil ? (span + st[j] - 1) / st[j] : span / st[j]) + 1;
    if (p.ceil && (out[j] - 1) * st[j] >= in[j] + pb[j]) --out[j];
  }
  Shape ys{x.shape()[0], x.shape()[1]};
  for (size_t i = 0; i < k; ++i) ys.push_back(out[3 - k + i]);
  Tensor y = Tensor::empty(DType::f32, ys);
  int64_t planes = ys[0] * ys[1], isz = in[0] * in[1] * in[2], osz = out[0] * out[1] * out[2];
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o = 0; o < osz; ++o) {
      int64_t od[3] = {o / (out[1] * out[2]), (o / out[2]) % out[1], o % out[2]};
      double best = -INFINITY, sum = 0;
      int64_t inside = 0, padded = 0;
      for (int64_t a = 0; a < ker[0]; ++a)
        for (int64_t b = 0; b < ker[1]; ++b)
          for (int64_t c = 0; c < ker[2]; ++c) {
            int64_t t[3] = {a, b, c}, pos[3];
            bool in_x = true, in_pad = true;
            for (int i = 0; i < 3; ++i) {
              pos[i] = od[i] * st[i] - pb[i] + t[i] * dl[i];
              in_x &= pos[i] >= 0 && pos[i] < in[i];
              in_pad &= pos[i] < in[i] + pe[i];
            }
            padded += in_pad;
            if (!in_x) continue;
            double v = x.scalar_at(pl * isz + (pos[0] * in[1] + pos[1]) * in[2] + pos[2]);
            best = std::max(best, v);
            sum += v;
            ++inside;
          }
      double r = is_max ? best : sum / double(p.include_pad ? padded : inside);
      y.data<float>()[pl * osz + o] = float(r);
    }
  return y;
}

// Output layout the CPU kernel plans for input `x` in layout `l`.
Layout planned_layout(const std::string& op, const Attributes& a, const Shape& x, Layout l) {
  ops::InferContext ic;
  ic.op_type = op;
  ic.attrs = &a;
  ic.inputs = {TensorDesc{DType::f32, x, l}};
  ic.present = {true};
  ic.constants = {nullptr};
  OpDesc d;
  d.op_type = op;
  d.attrs = &a;
  d.inputs = ic.inputs;
  d.present = ic.present;
  d.constants = ic.constants;
  d.outputs = ops::infer_outputs(ic);
  return cpu::cpu_backend().prepare(d).output_layouts.at(0);
}

std::string describe(const PoolCase& p, Layout l) {
  return p.op + " x" + shape_str(p.x) + " k" + shape_str(p.kernel) + " s" + shape_str(p.strides) + " d" +
         shape_str(p.dilations) + " pads" + shape_str(p.pads) + " ceil " + std::to_string(p.ceil) +
         " include_pad " + std::to_string(p.include_pad) + " " + p.auto_pad + " " + std::string(layout_name(l));
}

}  // namespace

TEST(CpuPool, MatchesNaiveLoop) {
  std::vector<PoolCase> cases = {
      {"MaxPool", {2, 20, 15, 15}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},                  // ResNet stem pool
      {"MaxPool", {1, 16, 7, 7}, {2, 2}, {2, 2}, {}, {}, true},                        // ceil_mode, partial window
      {"MaxPool", {1, 8, 5, 6}, {2, 2}, {2, 2}, {}, {1, 1, 1, 1}, true},               // ceil drops a window in padding
      {"MaxPool", {1, 17, 12, 11}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}},              // dilation
      {"MaxPool", {2, 4, 9, 8}, {3, 2}, {2, 1}, {}, {0, 1, 2, 0}},                     // asymmetric pads
      {"MaxPool", {1, 5, 10, 11}, {3, 3}, {2, 2}, {}, {}, false, false, "SAME_UPPER"},
      {"MaxPool", {2, 3, 20}, {4}, {3}, {}, {1, 2}},                                   // 1-D
      {"MaxPool", {1, 2, 6, 7, 5}, {2, 3, 2}, {2, 2, 1}},                              // 3-D
      {"AveragePool", {2, 20, 15, 15}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
      {"AveragePool", {2, 20, 15, 15}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, false, true},
      {"AveragePool", {1, 16, 7, 7}, {2, 2}, {2, 2}, {}, {}, true},                    // ceil, exclude pad
      {"AveragePool", {1, 16, 7, 7}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, true, true},    // ceil fits the pads
      {"AveragePool", {1, 6, 7, 7}, {3, 3}, {2, 2}, {}, {1, 1, 0, 0}, true, true},     // ceil hangs past the pads
      {"AveragePool", {2, 3, 20}, {5}, {2}, {}, {2, 2}, false, true},                  // 1-D
      {"AveragePool", {1, 2, 6, 7, 5}, {2, 3, 2}, {2, 2, 1}, {}, {1, 1, 0, 0, 1, 1}},  // 3-D
      {"GlobalAveragePool", {2, 40, 7, 7}},
      {"GlobalMaxPool", {2, 40, 7, 7}},
      {"GlobalAveragePool", {2, 5, 9}},
      {"GlobalMaxPool", {1, 3, 4, 3, 5}},
  };
  uint64_t seed = 500;
  for (const PoolCase& p : cases) {
    Tensor x = random_tensor(p.x, seed += 3);
    Tensor ref = reference_pool(x, p);
    std::vector<Layout> layouts{Layout::plain};
    if (p.x.size() == 4) layouts = {Layout::plain, Layout::blocked16, Layout::nhwc};
    for (Layout l : layouts) {
      OpCall c = make_call(p.op, pool_attrs(p), {x});
      c.input_layout = l;
      Tensor y = run_op_cpu(c)[0];
      ASSERT_EQ(y.shape(), ref.shape()) << describe(p, l);
      EXPECT_LE(max_abs_diff(y, ref), 1e-5 * std::max(max_abs(ref), 1e-6)) << describe(p, l);
    }
  }
}

// Blocked activations stay blocked through pooling (no reorder around it).
TEST(CpuPool, KeepsTheInputLayout) {
  PoolCase max{"MaxPool", {1, 64, 56, 56}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}};
  PoolCase gap{"GlobalAveragePool", {1, 2048, 7, 7}};
  for (Layout l : {Layout::plain, Layout::blocked16, Layout::blocked8, Layout::nhwc}) {
    EXPECT_EQ(planned_layout(max.op, pool_attrs(max), max.x, l), l) << layout_name(l);
    EXPECT_EQ(planned_layout(gap.op, pool_attrs(gap), gap.x, l), l) << layout_name(l);
  }
}

TEST(CpuPool, RejectsIndicesOutputAndBadAttributes) {
  Tensor x = random_tensor({1, 2, 6, 6}, 1);
  Attributes a;
  a.set("kernel_shape", Shape{2, 2});
  OpCall with_indices = make_call("MaxPool", a, {x});
  with_indices.num_outputs = 2;
  EXPECT_THROW(run_op_cpu(with_indices), Error);
  Attributes bad = a;
  bad.set("strides", Shape{0, 1});
  EXPECT_THROW(run_op_cpu(make_call("MaxPool", bad, {x})), Error);
  Attributes big;
  big.set("kernel_shape", Shape{7, 7});
  EXPECT_THROW(run_op_cpu(make_call("AveragePool", big, {x})), Error);
}

// bf16 pooling: max is exact on bf16 values; the average is rounded to bf16
// (8 bits): 1e-2 * max|ref| against the float64 loop on the rounded input.
TEST(CpuPool, Bf16MatchesNaiveLoopOnRoundedInputs) {
  TANDEM_SKIP_WITHOUT_CPU_BF16();
  Tensor xf = random_tensor({1, 20, 9, 9}, 3);
  Tensor x = Tensor::empty(DType::bf16, xf.shape()), xr = Tensor::empty(DType::f32, xf.shape());
  for (int64_t i = 0; i < xf.numel(); ++i) {
    static_cast<uint16_t*>(x.raw())[i] = float_to_bf16(xf.data<float>()[i]);
    xr.data<float>()[i] = bf16_to_float(static_cast<uint16_t*>(x.raw())[i]);
  }
  for (const PoolCase& p : {PoolCase{"MaxPool", {1, 20, 9, 9}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
                            PoolCase{"AveragePool", {1, 20, 9, 9}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
                            PoolCase{"GlobalAveragePool", {1, 20, 9, 9}}})
    for (Layout l : {Layout::plain, Layout::blocked16}) {
      Tensor ref = reference_pool(xr, p);
      OpCall c = make_call(p.op, pool_attrs(p), {x});
      c.input_layout = l;
      Tensor y = run_op_cpu(c)[0];
      ASSERT_EQ(y.dtype(), DType::bf16);
      double tol = p.op == "MaxPool" ? 0.0 : 1e-2 * max_abs(ref);
      EXPECT_LE(max_abs_diff(y, ref), tol) << describe(p, l) << " bf16";
    }
}
