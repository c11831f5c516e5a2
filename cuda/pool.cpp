// MaxPool, AveragePool, GlobalMaxPool (2-D) on
// cudnnPoolingForward, NHWC in and out, f32, f16 and bf16.
// cuDNN pads symmetrically and sizes the output with floor division, so a
// window that ONNX would place differently is refused as unsupported: unequal
// begin/end pads, a ceil_mode output larger than cuDNN's, dilations, and
// MaxPool's Indices output. Explicit zero padding (as cuda/conv.cpp does)
// would be wrong here: zeros change a max and the count of an excluding
// average.
#include <memory>

#include "cuda/check.h"
#include "cuda/cudnn_utils.h"
#include "cuda/registry.h"
#include "ops/pool.h"

namespace tandem::cuda {

namespace {

void check_cudnn_can_pool(const OpDesc& op, const ops::Window& w, const Shape& in) {
  const std::string what = "CUDA " + op.op_type + " of node '" + op.node + "'";
  check_supported(op.outputs.size() == 1, what + ": MaxPool's Indices output is not supported", op.context());
  check_supported(in.size() == 2, what + " is 2-D only (4-D input), got " + op.inputs[0].str(), op.context());
  for (size_t i = 0; i < 2; ++i) {
    check_supported(w.dilations[i] == 1, what + ": dilated pooling is not supported", op.context());
    check_supported(w.pads_begin[i] == w.pads_end[i] && w.effective_pad_end(i, in[i]) == w.pads_end[i],
                    what + ": asymmetric padding (unequal pads or a ceil_mode window past the pads) is not supported",
                    op.context());
    check_supported(w.pads_begin[i] < w.kernel[i], what + ": a pad as large as the window is not supported",
                    op.context());
  }
}

class CudnnPoolKernel final : public Kernel {
 public:
  CudnnPoolKernel(const OpDesc& op, Context& c) : c_(c), where_(op.context()), xd_(where_), yd_(where_), pd_(where_) {
    const TensorDesc& x = op.inputs[0];
    check_supported(x.shape.size() == 4, "CUDA " + op.op_type + " is 2-D only (4-D input), got " + x.str(), where_);
    ops::PoolParams p = ops::pool_params(op.op_type, op.attributes(), x.shape);
    Shape in(x.shape.begin() + 2, x.shape.end());
    check_cudnn_can_pool(op, p.window, in);
    check_supported(x.numel() > 0, "CUDA " + op.op_type + " of an empty tensor " + x.str(), where_);
    cudnnDataType_t t = cudnn_dtype(x.dtype, op.op_type, where_);
    const Shape& y = op.outputs[0].shape;
    set_nhwc(xd_, t, x.shape[0], x.shape[1], x.shape[2], x.shape[3], where_);
    set_nhwc(yd_, t, y[0], y[1], y[2], y[3], where_);
    const ops::Window& w = p.window;
    cudnnPoolingMode_t mode = p.kind == ops::PoolKind::max ? CUDNN_POOLING_MAX
                              : p.count_include_pad        ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                           : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    check_cudnn(cudnnSetPooling2dDescriptor(pd_.get(), mode, CUDNN_PROPAGATE_NAN, int(w.kernel[0]), int(w.kernel[1]),
                                            int(w.pads_begin[0]), int(w.pads_begin[1]), int(w.strides[0]),
                                            int(w.strides[1])),
                "cudnnSetPooling2dDescriptor", where_);
    int dims[4] = {};
    check_cudnn(cudnnGetPoolingNdForwardOutputDim(pd_.get(), xd_.get(), 4, dims), "cudnnGetPoolingNdForwardOutputDim",
                where_);
    check_supported(dims[0] == y[0] && dims[1] == y[1] && dims[2] == y[2] && dims[3] == y[3],
                    "CUDA " + op.op_type + ": cuDNN's pooling output [" + std::to_string(dims[2]) + "," +
                        std::to_string(dims[3]) + "] differs from ONNX's " + shape_str({y[2], y[3]}) +
                        " (ceil_mode)",
                    where_);
  }

  void run(const void* const* in, void* const* out, const RunContext&) override {
    const float one = 1.f, zero = 0.f;
    check_cudnn(cudnnPoolingForward(c_.cudnn, pd_.get(), &one, xd_.get(), in[0], &zero, yd_.get(), out[0]),
                "cudnnPoolingForward", where_);
  }

 private:
  Context& c_;
  ErrorContext where_;
  TensorDescriptor xd_, yd_;
  PoolingDescriptor pd_;
};

KernelPlan make_pool(const OpDesc& op, Context& c) {
  KernelPlan plan;
  plan.kernel = std::make_unique<CudnnPoolKernel>(op, c);
  plan.input_layouts = {Layout::nhwc};
  plan.output_layouts = {Layout::nhwc};
  return plan;
}

}  // namespace

void register_pool_kernels() {
  for (const char* t : {"MaxPool", "AveragePool", "GlobalMaxPool"})
    register_kernel(t, make_pool);
}

}  // namespace tandem::cuda
