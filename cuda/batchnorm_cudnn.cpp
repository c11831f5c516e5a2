#include "cuda/batchnorm_cudnn.h"

#include <climits>
#include <memory>
#include <optional>

#include "cuda/cudnn_utils.h"
#include "cuda/convert.h"

namespace tandem::cuda::train {

namespace {

// The descriptors and sizes of one shape, dtype and op set. The persistent
// mode when cuDNN sizes it for the shape, else (plain batch norm only) the
// spatial one; `ok` false when cuDNN has no kernel for a fused op set.
struct BnPlan {
  BnPlan(const Tensor& x, cudnnHandle_t h, cudnnBatchNormOps_t bn_ops, const ErrorContext& where)
      : xd(where), bnd(where), act(where), ops(bn_ops) {
    for (int64_t d : x.shape())
      TANDEM_CHECK_SUPPORTED(d <= INT_MAX, "a batch norm extent over 2^31", where);
    set_nhwc(xd, cudnn_dtype(x.dtype(), "batch_norm", where), x.dim(0), x.dim(1), x.dim(2),
             x.dim(3), where);
    check_cudnn(cudnnSetActivationDescriptor(act.get(), CUDNN_ACTIVATION_RELU,
                                             CUDNN_PROPAGATE_NAN, 0.0),
                "cudnnSetActivationDescriptor", where);
    for (cudnnBatchNormMode_t m : {CUDNN_BATCHNORM_SPATIAL_PERSISTENT, CUDNN_BATCHNORM_SPATIAL}) {
      mode = m;
      check_cudnn(cudnnDeriveBNTensorDescriptor(bnd.get(), xd.get(), m),
                  "cudnnDeriveBNTensorDescriptor", where);
      ok = sizes(h) == CUDNN_STATUS_SUCCESS;
      if (ok || fused()) return;
    }
    check_cudnn(sizes(h), "cudnnGetBatchNormalization*Size", where);
  }

  bool fused() const { return ops != CUDNN_BATCHNORM_OPS_BN; }
  cudnnActivationDescriptor_t activation() const { return fused() ? act.get() : nullptr; }
  cudnnTensorDescriptor_t z() const {
    return ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION ? xd.get() : nullptr;
  }

  cudnnStatus_t sizes(cudnnHandle_t h) {
    cudnnStatus_t s = cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
        h, mode, ops, xd.get(), z(), xd.get(), bnd.get(), activation(), &forward_workspace);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    s = cudnnGetBatchNormalizationBackwardExWorkspaceSize(
        h, mode, ops, xd.get(), fused() ? xd.get() : nullptr, xd.get(), z(), xd.get(), bnd.get(),
        activation(), &backward_workspace);
    if (s != CUDNN_STATUS_SUCCESS) return s;
    return cudnnGetBatchNormalizationTrainingExReserveSpaceSize(h, mode, ops, activation(),
                                                                xd.get(), &reserve);
  }

  TensorDescriptor xd, bnd;
  ActivationDescriptor act;
  cudnnBatchNormOps_t ops;
  cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL;
  bool ok = false;
  size_t forward_workspace = 0, backward_workspace = 0, reserve = 0;
};

// The fused op set: BN-ReLU, or BN-add-ReLU with a residual z.
cudnnBatchNormOps_t fused_ops(const Tensor& z) {
  return z.defined() ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION : CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
}

BnPlan& plan_for(TrainContext& c, const Tensor& x, cudnnBatchNormOps_t ops,
                 const ErrorContext& where) {
  std::string key = cache_key("batch_norm_nhwc", x.shape(), x.dtype(), int(ops));
  return c.plans.get<BnPlan>(key,
                             [&] { return std::make_unique<BnPlan>(x, c.gpu.cudnn, ops, where); });
}

// The saved state's parts: the mean and inverse standard deviation, then
// the reserve (256-byte aligned).
size_t reserve_offset(int64_t channels) { return align_up(2 * size_t(channels) * sizeof(float)); }
size_t saved_bytes(const BnPlan& plan, int64_t channels) {
  return reserve_offset(channels) + plan.reserve;
}
float* saved_mean(const Tensor& s) { return static_cast<float*>(s.raw()); }
float* saved_invstd(const Tensor& s, int64_t channels) { return saved_mean(s) + channels; }
void* saved_reserve(const Tensor& s, int64_t channels) {
  return static_cast<char*>(s.raw()) + reserve_offset(channels);
}

// A [channels] f32 view at `offset` floats into t.
Tensor channel_view(const Tensor& t, int64_t offset, int64_t channels) {
  return Tensor(TensorDesc{DType::f32, {channels}}, t.storage(),
                t.offset() + size_t(offset) * sizeof(float));
}

// cuDNN's blends other than 0 are not promised on its persistent path: it
// overwrites scratch, which sum_to then moves into (or adds to) each wanted
// destination.
struct ParamGrads {
  ParamGrads(TrainContext& c, int64_t channels)
      : channels(channels), scratch(device_empty(c.gpu, DType::f32, {2 * channels})) {}
  void* dgamma() const { return scratch.raw(); }
  void* dbeta() const { return static_cast<float*>(scratch.raw()) + channels; }
  void finish(TrainContext& c, const GradOut& gamma, const GradOut& beta) const {
    if (gamma.wanted()) sum_to(&c, channel_view(scratch, 0, channels), gamma);
    if (beta.wanted()) sum_to(&c, channel_view(scratch, channels, channels), beta);
  }
  int64_t channels;
  Tensor scratch;
};

// Where cuDNN writes an activation's gradient, which it overwrites: the
// wanted tensor itself when the caller overwrites it too, else scratch that
// finish() adds into the wanted one.
struct ActivationGradOut {
  ActivationGradOut(TrainContext& c, const GradOut& g, const Tensor& like)
      : want(g),
        t(g.wanted() && g.mode == GradMode::overwrite
              ? g.t
              : device_empty(c.gpu, like.dtype(), like.shape()).with_layout(Layout::nhwc)) {}
  void finish(TrainContext& c, const ErrorContext& where) const {
    if (want.wanted() && t.raw() != want.t.raw()) convert_into(c, t, want.t, true, where);
  }
  GradOut want;
  Tensor t;
};

void require_saved(const BnPlan& plan, const Tensor& saved, int64_t channels,
                   const ErrorContext& where) {
  TANDEM_CHECK(
      saved.defined() && saved.dtype() == DType::u8 && saved.bytes() == saved_bytes(plan, channels),
      "batch norm's backward needs its forward's saved state", where);
}

// One training forward through the Ex API for the plan's op set: plain
// batch norm (z undefined) or fused with the ReLU (and the add of z).
cudnnStatus_t forward_ex(TrainContext& c, const BnPlan& plan, const ops::BatchNormParams& p,
                         const Tensor& x, const Tensor& z, const Tensor& gamma, const Tensor& beta,
                         const Tensor& running_mean, const Tensor& running_var, const Tensor& y,
                         const Tensor& saved) {
  const int64_t channels = x.dim(1);
  Scratch ws(c.gpu, plan.forward_workspace);
  const float one = 1.f, zero = 0.f;
  return cudnnBatchNormalizationForwardTrainingEx(
      c.gpu.cudnn, plan.mode, plan.ops, &one, &zero, plan.xd.get(), x.raw(), plan.z(),
      z.defined() ? z.raw() : nullptr, plan.xd.get(), y.raw(), plan.bnd.get(), gamma.raw(),
      beta.raw(), double(p.momentum), running_mean.raw(), running_var.raw(), double(p.epsilon),
      saved_mean(saved), saved_invstd(saved, channels), plan.activation(), ws.get(), ws.bytes(),
      saved_reserve(saved, channels), plan.reserve);
}

// Its backward: dx, dgamma, dbeta and, with the add, dz. The fused op sets
// also read the forward's y and beta (undefined for plain batch norm).
void backward_ex(TrainContext& c, const BnPlan& plan, const ops::BatchNormParams& p, const Tensor& x,
                 const Tensor& gamma, const Tensor& beta, const Tensor& y, const Tensor& saved,
                 const Tensor& dy, const GradOut& dx, const GradOut& dz, const GradOut& dgamma,
                 const GradOut& dbeta, const ErrorContext& where) {
  const int64_t channels = x.dim(1);
  require_saved(plan, saved, channels, where);
  const ActivationGradOut dx_out(c, dx, x);
  std::optional<ActivationGradOut> dz_out;
  if (plan.z()) dz_out.emplace(c, dz, x);
  ParamGrads params(c, channels);
  Scratch ws(c.gpu, plan.backward_workspace);
  const float one = 1.f, zero = 0.f;
  check_cudnn(
      cudnnBatchNormalizationBackwardEx(
          c.gpu.cudnn, plan.mode, plan.ops, &one, &zero, &one, &zero, plan.xd.get(), x.raw(),
          plan.fused() ? plan.xd.get() : nullptr, y.defined() ? y.raw() : nullptr, plan.xd.get(),
          dy.raw(), plan.z(), dz_out ? dz_out->t.raw() : nullptr, plan.xd.get(), dx_out.t.raw(),
          plan.bnd.get(), gamma.raw(), beta.defined() ? beta.raw() : nullptr, params.dgamma(),
          params.dbeta(), double(p.epsilon), saved_mean(saved), saved_invstd(saved, channels),
          plan.activation(), ws.get(), ws.bytes(), saved_reserve(saved, channels), plan.reserve),
      "cudnnBatchNormalizationBackwardEx", where);
  params.finish(c, dgamma, dbeta);
  dx_out.finish(c, where);
  if (dz_out) dz_out->finish(c, where);
}

}  // namespace

bool cudnn_batch_norm_takes(const ops::BatchNormParams& p, const Tensor& x) {
  return p.training && x.layout() == Layout::nhwc && x.rank() == 4 &&
         double(p.epsilon) >= CUDNN_BN_MIN_EPSILON;
}

void cudnn_batch_norm_forward(TrainContext& c, const ops::BatchNormParams& p, const Tensor& x,
                              const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& y, Tensor* saved,
                              const ErrorContext& where) {
  BnPlan& plan = plan_for(c, x, CUDNN_BATCHNORM_OPS_BN, where);
  *saved = device_empty(c.gpu, DType::u8, {int64_t(saved_bytes(plan, x.dim(1)))});
  if (x.numel() == 0) return;
  check_cudnn(
      forward_ex(c, plan, p, x, Tensor(), gamma, beta, running_mean, running_var, y, *saved),
      "cudnnBatchNormalizationForwardTrainingEx", where);
}

void cudnn_batch_norm_backward(TrainContext& c, const ops::BatchNormParams& p, const Tensor& x,
                               const Tensor& gamma, const Tensor& saved, const Tensor& dy,
                               const GradOut& dx, const GradOut& dgamma, const GradOut& dbeta,
                               const ErrorContext& where) {
  const BnPlan& plan = plan_for(c, x, CUDNN_BATCHNORM_OPS_BN, where);
  if (x.numel() == 0) return require_saved(plan, saved, x.dim(1), where);
  backward_ex(c, plan, p, x, gamma, Tensor(), Tensor(), saved, dy, dx, GradOut(), dgamma, dbeta,
              where);
}

bool cudnn_batch_norm_relu_forward(TrainContext& c, const ops::BatchNormParams& p, const Tensor& x,
                                   const Tensor& z, const Tensor& gamma, const Tensor& beta,
                                   const Tensor& running_mean, const Tensor& running_var,
                                   const Tensor& y, Tensor* saved, const ErrorContext& where) {
  // cuDNN's fused kernels: f16 NHWC with C % 4 == 0, persistent mode only.
  if (!cudnn_batch_norm_takes(p, x) || x.dtype() != DType::f16 || x.dim(1) % 4 != 0 ||
      x.numel() == 0)
    return false;
  if (z.defined() && (z.shape() != x.shape() || z.dtype() != x.dtype() || z.layout() != x.layout()))
    return false;
  BnPlan& plan = plan_for(c, x, fused_ops(z), where);
  if (!plan.ok || plan.mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT) return false;
  *saved = device_empty(c.gpu, DType::u8, {int64_t(saved_bytes(plan, x.dim(1)))});
  check_cudnn(forward_ex(c, plan, p, x, z, gamma, beta, running_mean, running_var, y, *saved),
              "cudnnBatchNormalizationForwardTrainingEx (BN-ReLU)", where);
  return true;
}

void cudnn_batch_norm_relu_backward(TrainContext& c, const ops::BatchNormParams& p, const Tensor& x,
                                    const Tensor& z, const Tensor& gamma, const Tensor& beta,
                                    const Tensor& y, const Tensor& saved, const Tensor& dy,
                                    const GradOut& dx, const GradOut& dz, const GradOut& dgamma,
                                    const GradOut& dbeta, const ErrorContext& where) {
  const BnPlan& plan = plan_for(c, x, fused_ops(z), where);
  TANDEM_CHECK(plan.ok, "batch_norm_relu's backward without its fused forward", where);
  TANDEM_CHECK(dy.dtype() == x.dtype() && dy.layout() == x.layout() && dy.shape() == x.shape(),
               "batch_norm_relu's backward wants dy like y", where);
  backward_ex(c, plan, p, x, gamma, beta, y, saved, dy, dx, dz, dgamma, dbeta, where);
}

}  // namespace tandem::cuda::train
