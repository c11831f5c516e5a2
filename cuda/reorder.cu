// tandem.Reorder on the GPU: NCHW (plain) <-> NHWC for 4-D tensors of any
// 1-, 2- or 4-byte dtype (8-bit integers for the integer convolutions),
// through 32x32 shared-memory tiles so both the reads and the writes are
// coalesced. The CUDA backend's convolutions are NHWC
// (tensor cores want channels last); everything else takes either.
#include <cuda_fp16.h>

#include <memory>

#include "cuda/check.h"
#include "cuda/registry.h"

namespace tandem::cuda {

namespace {

constexpr int kTile = 32;

// Transposes the last two axes of [batch, rows, cols] -> [batch, cols, rows].
template <typename T>
__global__ void transpose_kernel(const T* in, T* out, int rows, int cols) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t base = int64_t(blockIdx.z) * rows * cols;
  int r = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  for (int k = 0; k < kTile; k += blockDim.y)
    if (r + k < rows && col < cols) tile[threadIdx.y + k][threadIdx.x] = in[base + int64_t(r + k) * cols + col];
  __syncthreads();
  r = blockIdx.x * kTile + threadIdx.y;
  col = blockIdx.y * kTile + threadIdx.x;
  for (int k = 0; k < kTile; k += blockDim.y)
    if (r + k < cols && col < rows) out[base + int64_t(r + k) * rows + col] = tile[threadIdx.x][threadIdx.y + k];
}

template <typename T>
class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(Context& c, int batch, int rows, int cols, ErrorContext where)
      : c_(c), batch_(batch), rows_(rows), cols_(cols), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    dim3 block(kTile, 8), grid(unsigned((cols_ + kTile - 1) / kTile), unsigned((rows_ + kTile - 1) / kTile), unsigned(batch_));
    if (batch_ == 0 || rows_ == 0 || cols_ == 0) return;
    transpose_kernel<T><<<grid, block, 0, c_.stream>>>(static_cast<const T*>(in[0]), static_cast<T*>(out[0]), rows_, cols_);
    check_launch("transpose_kernel", where_);
  }

 private:
  Context& c_;
  int batch_, rows_, cols_;
  ErrorContext where_;
};

KernelPlan reorder(const OpDesc& op, Context& c) {
  const TensorDesc& in = op.inputs[0];
  auto to = Layout(op.attributes().get_int("to_layout", int64_t(Layout::plain)));
  check_supported(!op.attributes().has("to_dtype"), "CUDA reorder with a dtype change", op.context());
  bool nchw_to_nhwc = in.layout == Layout::plain && to == Layout::nhwc;
  bool nhwc_to_nchw = in.layout == Layout::nhwc && to == Layout::plain;
  check_supported(in.shape.size() == 4 && (nchw_to_nhwc || nhwc_to_nchw),
                  "CUDA reorder " + in.str() + " to layout " + std::to_string(int(to)), op.context());
  int n = int(in.shape[0]), ch = int(in.shape[1]), hw = int(in.shape[2] * in.shape[3]);
  // NCHW -> NHWC transposes [n, C, HW]; NHWC -> NCHW transposes [n, HW, C].
  int rows = nchw_to_nhwc ? ch : hw, cols = nchw_to_nhwc ? hw : ch;
  KernelPlan plan;
  size_t es = dtype_size(in.dtype);
  if (es == 4) plan.kernel = std::make_unique<TransposeKernel<float>>(c, n, rows, cols, op.context());
  else if (es == 2) plan.kernel = std::make_unique<TransposeKernel<__half>>(c, n, rows, cols, op.context());
  else if (es == 1) plan.kernel = std::make_unique<TransposeKernel<uint8_t>>(c, n, rows, cols, op.context());
  else throw Error::unsupported("CUDA reorder of " + std::string(dtype_name(in.dtype)), op.context());
  plan.input_layouts = {in.layout};
  plan.output_layouts = {to};
  return plan;
}

}  // namespace

void register_reorder_kernels() { register_kernel(kReorderOp, reorder); }

}  // namespace tandem::cuda
