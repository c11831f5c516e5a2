// Conv and tandem.FusedConv (2-D) on cuDNN's legacy convolution API, NHWC
// activations, f32, f16 and bf16.
//   X [N, C, H, W] (nhwc) * W [M, C/group, R, S] (constant) -> Y [N, M, P, Q] (nhwc)
// The weights are transposed once, at prepare, to KRSC (cuDNN's NHWC filter
// layout) and kept on the device. The algorithm is chosen at prepare by
// timing on temporary buffers, under the policy and with the on-disk cache
// training's convolutions use too (cuda/cudnn_conv.h).
// FusedConv: Y = act(conv(X) + B + R). cudnnConvolutionBiasActivationForward
// does all of it where cuDNN supports the case (relu, or identity with the
// IMPLICIT_PRECOMP_GEMM algorithm); a trial call at prepare confirms it, and
// anything else runs cudnnConvolutionForward plus one epilogue pass
// (cuda/conv_epilogue.cu).
// f16 or bf16 with fewer than 8 input channels (a network's RGB first layer),
// padded to 8 as cuda/cudnn_conv.h's tensor_core_channels says: such a conv
// takes its input NCHW and packs it (one pass, cuda/conv_epilogue.cu) into 8
// zero-padded channels, with zero weights for the extra channels; this
// replaces the NCHW->NHWC reorder, whose 32x32 tiles waste most threads on 3
// channels. (The packing makes 8 channels only: a C of 9 to 15 runs as it is.)
// cuDNN pads symmetrically only: unequal begin/end pads (TF SAME with stride
// 2 on an even input) are applied by copying X into a zero-bordered scratch
// tensor and convolving that without padding.
// Depthwise convs (group == C == M) do not come here: make_conv sends them
// to the own kernel of cuda/depthwise_conv.cu, as cuDNN's grouped
// convolution runs them far below memory bandwidth.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "profile/zone.h"
#include "cuda/check.h"
#include "cuda/conv_epilogue.h"
#include "cuda/cudnn_conv.h"
#include "cuda/depthwise_conv.h"
#include "cuda/float_types.h"
#include "cuda/registry.h"
#include "ops/conv.h"

namespace tandem::cuda {

namespace {

struct ConvShape {
  ops::ConvGeometry g;
  ops::FusedConvExtras extras;
  DType dtype = DType::f32;
  int64_t n = 0, c = 0, h = 0, w = 0;  // X
  int64_t m = 0, p = 0, q = 0;         // Y channels and extents
  int64_t r = 0, s = 0;                // kernel
  bool has_bias = false;
  bool explicit_pad = false;  // begin and end pads differ somewhere
  PadGeometry pad;            // the explicit padding when explicit_pad
  bool pack8 = false;         // NCHW input packed to 8 NHWC channels (see above)
  int64_t conv_c() const { return pack8 ? 8 : c; }  // channels cuDNN sees
};

ConvShape describe(const OpDesc& op) {
  ConvShape cs;
  const TensorDesc& x = op.inputs[0];
  check_supported(x.shape.size() == 4, "CUDA Conv is 2-D only (4-D input), got " + x.str(), op.context());
  check_supported(op.constants.size() > 1 && op.constants[1] != nullptr, "CUDA Conv needs constant weights",
                  op.context());
  cs.dtype = x.dtype;
  cs.g = ops::conv_geometry(op.attributes(), x.shape, op.inputs[1].shape);
  if (op.op_type == ops::kFusedConvOp) cs.extras = ops::fused_conv_extras(op.attributes());
  cs.has_bias = op.has_input(2);
  cs.n = x.shape[0], cs.c = x.shape[1], cs.h = x.shape[2], cs.w = x.shape[3];
  const Shape& y = op.outputs[0].shape;
  cs.m = y[1], cs.p = y[2], cs.q = y[3];
  const ops::Window& win = cs.g.window;
  cs.r = win.kernel[0], cs.s = win.kernel[1];
  check_supported(op.outputs[0].numel() > 0 && x.numel() > 0, "CUDA Conv of an empty tensor " + x.str(), op.context());
  cs.explicit_pad = win.pads_begin != win.pads_end;
  cs.pad = {cs.n, cs.h, cs.w, cs.c, win.pads_begin[0], win.pads_end[0], win.pads_begin[1], win.pads_end[1]};
  cs.pack8 = cs.c < 8 && tensor_core_channels(cs.dtype, cs.g.group, cs.c) == 8;
  return cs;
}

class CudnnConvKernel final : public Kernel {
 public:
  CudnnConvKernel(const OpDesc& op, Context& c)
      : c_(c),
        where_(op.context()),
        cs_(describe(op)),
        t_(cs_.dtype, Layout::nhwc, std::array<int64_t, 4>{cs_.n, cs_.conv_c(), x_h(), x_w()}.data(),
           std::array<int64_t, 4>{cs_.m, cs_.conv_c() / cs_.g.group, cs_.r, cs_.s}.data(),
           std::array<int64_t, 4>{cs_.n, cs_.m, cs_.p, cs_.q}.data(), where_),
        bd_(where_),
        cd_(where_),
        ad_(where_) {
    set_descriptors();
    upload_weights(*op.constants[1]);
    choose_algorithm();
  }

  void run(const void* const* in, void* const* out, const RunContext& rc) override {
    check(rc.scratch_bytes >= scratch_bytes(), "CUDA Conv got " + std::to_string(rc.scratch_bytes) +
                                                   " scratch bytes, needs " + std::to_string(scratch_bytes()),
          where_);
    char* scratch = static_cast<char*>(rc.scratch);
    const void* x = in[0];
    if (cs_.pack8) {
      PadGeometry g = cs_.pad;
      if (!cs_.explicit_pad) g.top = g.bottom = g.left = g.right = 0;
      launch_pack_nchw_to_nhwc8(in[0], scratch, g, c_.props, c_.stream, where_);
      x = scratch;
    } else if (cs_.explicit_pad) {
      launch_pad_nhwc(dtype_size(cs_.dtype), in[0], scratch, cs_.pad, c_.props, c_.stream, where_);
      x = scratch;
    }
    void* ws = workspace_bytes_ ? scratch + pad_bytes() : nullptr;
    const void* bias = cs_.has_bias ? in[2] : nullptr;
    const void* residual = cs_.extras.has_residual ? in[3] : nullptr;
    if (fused_) {
      convolve_fused(x, bias, residual, out[0], ws);
      return;
    }
    const float one = 1.f, zero = 0.f;
    check_cudnn(cudnnConvolutionForward(c_.cudnn, &one, t_.x.get(), x, t_.w.get(), weights_.get(), cd_.get(), algo_,
                                        ws, workspace_bytes_, &zero, t_.y.get(), out[0]),
                "cudnnConvolutionForward", where_);
    if (cs_.has_bias || residual || cs_.extras.activation.kind != ops::ActivationKind::none)
      launch_conv_epilogue(cs_.dtype, out[0], bias, residual, cs_.n * cs_.p * cs_.q * cs_.m, cs_.m,
                           cs_.extras.activation, c_.props, c_.stream, where_);
  }

  size_t scratch_bytes() const override { return pad_bytes() + workspace_bytes_; }
  bool packs_input() const { return cs_.pack8; }

 private:
  size_t pad_bytes() const { return cs_.explicit_pad || cs_.pack8 ? align_up(x_bytes()) : 0; }
  int64_t x_h() const { return cs_.explicit_pad ? cs_.pad.out_h() : cs_.h; }
  int64_t x_w() const { return cs_.explicit_pad ? cs_.pad.out_w() : cs_.w; }
  size_t x_bytes() const { return size_t(cs_.n * cs_.conv_c() * x_h() * x_w()) * dtype_size(cs_.dtype); }
  size_t y_bytes() const { return size_t(cs_.n * cs_.m * cs_.p * cs_.q) * dtype_size(cs_.dtype); }

  void set_descriptors() {
    const ops::Window& win = cs_.g.window;
    set_nhwc(bd_, cudnn_dtype(cs_.dtype, "Conv", where_), 1, cs_.m, 1, 1, where_);
    const int64_t no_pad[2] = {0, 0};
    set_conv(cd_, t_, cs_.explicit_pad ? no_pad : win.pads_begin.data(), win.strides.data(), win.dilations.data(),
             cs_.g.group, where_);
    bool relu = cs_.extras.activation.kind == ops::ActivationKind::relu;
    check_cudnn(cudnnSetActivationDescriptor(ad_.get(), relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                             CUDNN_PROPAGATE_NAN, 0.0),
                "cudnnSetActivationDescriptor", where_);
  }

  void upload_weights(const Tensor& w) {
    check(w.dtype() == cs_.dtype && w.layout() == Layout::plain && w.shape().size() == 4,
          "CUDA Conv weights " + w.desc().str() + " must be plain 4-D " + std::string(dtype_name(cs_.dtype)), where_);
    TANDEM_ZONE_CAT("upload conv weights", "cuda");
    std::vector<char> krsc = to_krsc(w, cs_.conv_c() / cs_.g.group);
    weights_ = DeviceBuffer(krsc.size(), "cudaMalloc(conv weights)", where_);
    // On the plan's stream, which need not be ordered after the legacy default stream.
    check_cuda(cudaMemcpyAsync(weights_.get(), krsc.data(), krsc.size(), cudaMemcpyHostToDevice, c_.stream),
               "cudaMemcpyAsync(conv weights)", where_);
    check_cuda(cudaStreamSynchronize(c_.stream), "cudaStreamSynchronize", where_);  // krsc is freed on return
  }

  // The algorithm (cuda/cudnn_conv.h), timed on zeroed scratch tensors, and
  // whether cuDNN's fused call runs it.
  void choose_algorithm() {
    TANDEM_ZONE_CAT("choose conv algorithm", "cuda");
    ConvProblem problem = conv_problem(t_, cd_, "forward", where_);
    if (cs_.has_bias) {
      auto act = cs_.extras.activation.kind;
      problem.fused = act == ops::ActivationKind::relu ? "bias+relu" : act == ops::ActivationKind::none ? "bias" : "bias+other";
      if (cs_.extras.has_residual) problem.fused += "+residual";
    }
    std::optional<DeviceBuffer> x, y;  // made only when measuring
    auto scratch = [&] {
      if (x) return;
      x.emplace(x_bytes(), "cudaMalloc(conv search input)", where_);
      y.emplace(y_bytes(), "cudaMalloc(conv search output)", where_);
      check_cuda(cudaMemsetAsync(x->get(), 0, x->bytes(), c_.stream), "cudaMemsetAsync", where_);
    };
    const ConvSearch<cudnnConvolutionFwdAlgoPerf_t> search = forward_search(c_.cudnn, t_, cd_, [&] {
      scratch();
      return ConvOperands{x->get(), weights_.get(), y->get()};
    });
    const ConvAlgo a = choose_conv_algo(c_, problem, cs_.dtype, cd_, search, where_);
    algo_ = cudnnConvolutionFwdAlgo_t(a.algo);
    workspace_bytes_ = a.workspace;
    if (a.cached) {
      fused_ = a.cached_fused && fusable();
    } else {
      scratch();
      fused_ = fusable() && fused_call_works(x->get(), y->get());
    }
    remember_conv_algo(c_, problem, cd_, a, fused_, where_);
    if (x) check_cuda(cudaStreamSynchronize(c_.stream), "cudaStreamSynchronize", where_);  // before the buffers go
  }

  // cuDNN's fused call adds the bias and applies relu or identity; identity
  // only with IMPLICIT_PRECOMP_GEMM (cuDNN's documented restriction).
  bool fusable() const {
    auto k = cs_.extras.activation.kind;
    if (!cs_.has_bias) return false;
    if (k == ops::ActivationKind::relu) return true;
    return k == ops::ActivationKind::none && algo_ == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  }

  // One fused call on scratch tensors: cuDNN rejects unsupported
  // combinations (type configuration, layout) only when called.
  bool fused_call_works(const void* x, void* y) {
    DeviceBuffer bias(size_t(cs_.m) * dtype_size(cs_.dtype), "cudaMalloc(conv trial bias)", where_);
    DeviceBuffer ws(workspace_bytes_, "cudaMalloc(conv trial workspace)", where_);
    DeviceBuffer residual(cs_.extras.has_residual ? y_bytes() : 0, "cudaMalloc(conv trial residual)", where_);
    check_cuda(cudaMemsetAsync(bias.get(), 0, bias.bytes(), c_.stream), "cudaMemsetAsync", where_);
    if (residual.get())
      check_cuda(cudaMemsetAsync(residual.get(), 0, residual.bytes(), c_.stream), "cudaMemsetAsync", where_);
    cudnnStatus_t st = fused_status(x, bias.get(), residual.get(), y, ws.get());
    if (st != CUDNN_STATUS_SUCCESS) cudaGetLastError();  // a refused call must not surface at a later launch check
    check_cuda(cudaStreamSynchronize(c_.stream), "cudaStreamSynchronize", where_);
    return st == CUDNN_STATUS_SUCCESS;
  }

  // z is y itself (scaled by 0) when there is no residual.
  cudnnStatus_t fused_status(const void* x, const void* bias, const void* residual, void* y, void* ws) {
    const float one = 1.f, alpha2 = residual ? 1.f : 0.f;
    return cudnnConvolutionBiasActivationForward(c_.cudnn, &one, t_.x.get(), x, t_.w.get(), weights_.get(), cd_.get(),
                                                 algo_, ws, workspace_bytes_, &alpha2, t_.y.get(),
                                                 residual ? residual : y, bd_.get(), bias, ad_.get(), t_.y.get(), y);
  }

  void convolve_fused(const void* x, const void* bias, const void* residual, void* y, void* ws) {
    check_cudnn(fused_status(x, bias, residual, y, ws), "cudnnConvolutionBiasActivationForward", where_);
  }

  Context& c_;
  ErrorContext where_;
  ConvShape cs_;
  ConvTensors t_;
  TensorDescriptor bd_;
  ConvolutionDescriptor cd_;
  ActivationDescriptor ad_;
  DeviceBuffer weights_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace_bytes_ = 0;
  bool fused_ = false;
};

KernelPlan make_conv(const OpDesc& op, Context& c) {
  if (is_depthwise_conv(op)) return make_depthwise_conv(op, c);
  auto kernel = std::make_unique<CudnnConvKernel>(op, c);
  const bool packs = kernel->packs_input();
  // The weights, converted to KRSC at prepare.
  KernelPlan plan = channels_last_conv_plan(op, std::move(kernel), {false, true});
  if (packs) plan.input_layouts[0] = Layout::plain;
  return plan;
}

}  // namespace

void register_conv_kernels() {
  register_kernel("Conv", make_conv);
  register_kernel(ops::kFusedConvOp, make_conv);
}

}  // namespace tandem::cuda
