// batch_norm_relu on cuda:0, where f16 nhwc training takes cuDNN's fused
// BN-ReLU and BN-add-ReLU kernels (bf16 composes the ops), against the
// CPU table's batch_norm, add and relu composed in f32 on the same inputs,
// rounded to the 16-bit dtype: y, the running statistics, dx, dz
// (overwritten, and accumulated when the residual also feeds another op),
// dgamma and dbeta. The GPU rounds y, dx and dz to 16 bits and reduces in
// another order: relative error over the tensor <= 1e-2 for f16, 1e-1 for
// bf16 (see tolerance()); an unmasked gradient or a lost residual is off by
// O(1). Also: the shapes and dtypes the fused kernels lack fall back to the
// composed ops.
#include "core/half.h"
#include "train/device_tensor.h"
#include "train/functional.h"
#include "train_test_util.h"

namespace tandem::testing {
namespace {

using namespace tandem::train;

// bf16 composes the three ops, rounding batch norm's output to 8 bits of
// mantissa before the add, which can flip the ReLU's mask for
// pre-activations within 2^-9 of zero; each flip moves a whole dy into
// dbeta, a sum that partly cancels: 1e-1 there, still far below a lost
// mask or residual (O(1)).
double tolerance(DType t) { return t == DType::bf16 ? 1e-1 : 1e-2; }

// t (host f32) with every value rounded through `dtype` (f16 or bf16).
Tensor rounded(Tensor t, DType dtype) {
  float* v = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    v[i] = dtype == DType::bf16 ? bf16_to_float(float_to_bf16(v[i]))
                                : f16_to_float(float_to_f16(v[i]));
  return t;
}

// A host f32 plain copy of a (device, any dtype/layout) tensor.
Tensor host_f32(const Tensor& t) {
  NoGradGuard no_grad;
  return to_host(convert(Var(t), DType::f32, Layout::plain).value());
}

// A leaf on cuda:0 holding host f32 `t` as `dtype` in `layout`.
Var leaf(const Tensor& t, DType dtype, Layout layout) {
  NoGradGuard no_grad;
  return Var(convert(Var(up(t)), dtype, layout).value(), true);
}

struct Result {
  Tensor y, dx, dz, dgamma, dbeta, running_mean, running_var;
};

// relu(batch_norm(x) + z) (+ z again when `reused`), backward from seed dy,
// on the device and in the dtype/layout of `dtype`, `layout`.
Result run(const Tensor& x, const Tensor& z, const Tensor& dy, bool on_gpu, DType dtype,
           Layout layout, bool reused) {
  const int64_t c = x.dim(1);
  auto place = [&](const Tensor& t) {
    return on_gpu ? leaf(t, dtype, layout) : Var(t.clone(), true);
  };
  auto param = [&](const Tensor& t) { return Var(on_gpu ? up(t) : t.clone(), true); };
  auto buffer = [&](const Tensor& t) { return on_gpu ? up(t) : t.clone(); };
  Var xv = place(x), zv = z.defined() ? place(z) : Var();
  Var g = param(random_f32({c}, 11, 0.5f, 1.5f)), b = param(random_f32({c}, 12, -0.5f, 0.5f));
  Tensor rm = buffer(random_f32({c}, 13, -0.5f, 0.5f)),
         rv = buffer(random_f32({c}, 14, 0.5f, 1.5f));
  ops::BatchNormParams p{true, 0.1f, 1e-5f};
  Var y;
  if (on_gpu) {
    y = batch_norm_relu(xv, g, b, rm, rv, p, zv);
  } else {
    y = batch_norm(xv, g, b, rm, rv, p);
    y = relu(zv.defined() ? add(y, zv) : y);
  }
  Var out = reused ? add(y, zv) : y;
  Tensor seed = on_gpu ? leaf(dy, out.value().dtype(), out.value().layout()).value() : dy;
  Result r{host_f32(y.value()), {}, {}, {}, {}, host_f32(rm), host_f32(rv)};
  backward(out, seed);
  r.dx = host_f32(xv.grad());
  if (zv.defined()) r.dz = host_f32(zv.grad());
  r.dgamma = host_f32(g.grad());
  r.dbeta = host_f32(b.grad());
  return r;
}

void expect_fused_matches_cpu(const Shape& s, bool residual, bool reused,
                              DType dtype = DType::f16) {
  SCOPED_TRACE(shape_str(s) + " " + std::string(dtype_name(dtype)) +
               (residual ? " with residual" : "") + (reused ? ", reused" : ""));
  const double tol = tolerance(dtype);
  Tensor x = rounded(random_f32(s, 1, -2.f, 3.f), dtype);
  Tensor z = residual ? rounded(random_f32(s, 2, -1.f, 1.f), dtype) : Tensor();
  Tensor dy = rounded(random_f32(s, 3), dtype);
  Result gpu = run(x, z, dy, true, dtype, Layout::nhwc, reused);
  Result cpu = run(x, z, dy, false, DType::f32, Layout::plain, reused);
  EXPECT_LE(relative_error(gpu.y, cpu.y), tol) << "y";
  EXPECT_LE(relative_error(gpu.running_mean, cpu.running_mean), tol) << "running mean";
  EXPECT_LE(relative_error(gpu.running_var, cpu.running_var), tol) << "running var";
  EXPECT_LE(relative_error(gpu.dx, cpu.dx), tol) << "dx";
  if (residual) {
    EXPECT_LE(relative_error(gpu.dz, cpu.dz), tol) << "dz";
  }
  EXPECT_LE(relative_error(gpu.dgamma, cpu.dgamma), tol) << "dgamma";
  EXPECT_LE(relative_error(gpu.dbeta, cpu.dbeta), tol) << "dbeta";
}

// Whether the table's fused entry takes an [8, 16, 6, 6] x of `dtype` in
// nhwc with `p` (nothing is written when it declines).
bool fused_entry_takes(DType dtype, const ops::BatchNormParams& p) {
  const Shape s{8, 16, 6, 6};
  Var x = leaf(random_f32(s, 1), dtype, Layout::nhwc);
  Tensor g = up(random_f32({16}, 2, 0.5f, 1.5f)), b = up(random_f32({16}, 3));
  Tensor rm = up(Tensor::zeros(DType::f32, {16})), rv = up(random_f32({16}, 4, 1.f, 2.f));
  Tensor y = gpu_table().empty(gpu_table().ctx, dtype, s).with_layout(Layout::nhwc), saved;
  const bool took = gpu_table().batch_norm_relu_forward(gpu_table().ctx, p, x.value(), Tensor(), g,
                                                        b, rm, rv, y, &saved);
  EXPECT_EQ(took, saved.defined()) << "saved state exactly when taken";
  return took;
}

TEST(CudaTrainBatchNormRelu, FusedKernelTakesF16NhwcTraining) {
  TANDEM_REQUIRE_GPU();
  EXPECT_TRUE(fused_entry_takes(DType::f16, ops::BatchNormParams{.training = true}));
  EXPECT_FALSE(fused_entry_takes(DType::f16, ops::BatchNormParams{.training = false}))
      << "eval mode runs the composed ops";
  EXPECT_FALSE(fused_entry_takes(DType::f32, ops::BatchNormParams{.training = true})) << "f32 runs the composed ops";
  EXPECT_FALSE(fused_entry_takes(DType::bf16, ops::BatchNormParams{.training = true})) << "bf16 runs the composed ops";
}

TEST(CudaTrainBatchNormRelu, BnReluMatchesCpu) {
  TANDEM_REQUIRE_GPU();
  expect_fused_matches_cpu({8, 16, 6, 6}, false, false);
  expect_fused_matches_cpu({32, 64, 14, 14}, false, false);
}

TEST(CudaTrainBatchNormRelu, BnAddReluMatchesCpu) {
  TANDEM_REQUIRE_GPU();
  expect_fused_matches_cpu({8, 16, 6, 6}, true, false);
  expect_fused_matches_cpu({32, 64, 14, 14}, true, false);
}

TEST(CudaTrainBatchNormRelu, ResidualUsedTwiceAccumulatesDz) {
  TANDEM_REQUIRE_GPU();
  expect_fused_matches_cpu({8, 16, 6, 6}, true, true);
}

// bf16 composes batch norm, add and ReLU on the GPU: the same values.
TEST(CudaTrainBatchNormRelu, Bf16MatchesCpu) {
  TANDEM_REQUIRE_GPU();
  expect_fused_matches_cpu({8, 16, 6, 6}, false, false, DType::bf16);
  expect_fused_matches_cpu({32, 64, 14, 14}, true, false, DType::bf16);
  expect_fused_matches_cpu({8, 16, 6, 6}, true, true, DType::bf16);
}

TEST(CudaTrainBatchNormRelu, ChannelsNotMultipleOfFourFallBack) {
  TANDEM_REQUIRE_GPU();
  expect_fused_matches_cpu({8, 6, 5, 5}, true, false);
}

}  // namespace
}  // namespace tandem::testing
