// Not (bool masks) and Where (out = cond ? X : Y) with ONNX multidirectional
// broadcasting over plain tensors up to rank 6. Where moves X's and Y's
// elements as raw 1/2/4/8-byte words, so any dtype is exact.
#include <memory>
#include <vector>

#include "cuda/check.h"
#include "cuda/launch.h"
#include "cuda/registry.h"

namespace tandem::cuda {

namespace {

constexpr int kMaxRank = 6;

KernelPlan plain_plan(const OpDesc& op, std::unique_ptr<Kernel> k) {
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.output_layouts.assign(op.outputs.size(), Layout::plain);
  return plan;
}

// --- Not ---------------------------------------------------------------------

__global__ void not_kernel(const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = x[i] ? 0 : 1;
}

class NotKernel final : public Kernel {
 public:
  NotKernel(Context& c, int64_t n, ErrorContext where) : c_(c), n_(n), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    not_kernel<<<blocks_for(n_, c_.props), kThreads, 0, c_.stream>>>(
        static_cast<const uint8_t*>(in[0]), static_cast<uint8_t*>(out[0]), n_);
    check_launch("not_kernel", where_);
  }

 private:
  Context& c_;
  int64_t n_;
  ErrorContext where_;
};

KernelPlan make_not(const OpDesc& op, Context& c) {
  check_supported(op.inputs[0].dtype == DType::boolean,
                  "CUDA Not takes bool, got " + op.inputs[0].str(), op.context());
  return plain_plan(op, std::make_unique<NotKernel>(c, op.inputs[0].numel(), op.context()));
}

// --- Where -------------------------------------------------------------------

// Output index -> element offsets of Where's condition, X and Y (stride 0
// along the dims each one broadcasts).
struct WhereIndex {
  static constexpr int N = 3;
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t stride[N][kMaxRank] = {};
  __device__ void operator()(int64_t i, int64_t (&at)[N]) const {
    for (int k = 0; k < N; ++k) at[k] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t q = i / dims[d], r = i - q * dims[d];
      for (int k = 0; k < N; ++k) at[k] += r * stride[k][d];
      i = q;
    }
  }
};

WhereIndex where_index(const OpDesc& op) {
  constexpr int N = WhereIndex::N;
  const Shape& y = op.outputs[0].shape;
  check_supported(y.size() <= size_t(kMaxRank),
                  "CUDA Where broadcasts up to rank 6, got " + op.outputs[0].str(), op.context());
  WhereIndex w;
  w.rank = int(y.size());
  for (size_t d = 0; d < y.size(); ++d) w.dims[d] = y[d];
  for (size_t k = 0; k < size_t(N); ++k) {
    Shape s(y.size() - op.inputs[k].shape.size(), 1);
    s.insert(s.end(), op.inputs[k].shape.begin(), op.inputs[k].shape.end());
    std::vector<int64_t> strides = contiguous_strides(s);
    for (size_t d = 0; d < y.size(); ++d) w.stride[k][d] = s[d] == 1 ? 0 : strides[d];
  }
  return w;
}

template <typename W>
__global__ void where_kernel(const uint8_t* cond, const W* x, const W* y, W* out, int64_t n,
                             WhereIndex w) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t at[3];
    w(i, at);
    out[i] = cond[at[0]] ? x[at[1]] : y[at[2]];
  }
}

template <typename W>
class WhereKernel final : public Kernel {
 public:
  WhereKernel(Context& c, int64_t n, WhereIndex w, ErrorContext where)
      : c_(c), n_(n), w_(w), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    where_kernel<W><<<blocks_for(n_, c_.props), kThreads, 0, c_.stream>>>(
        static_cast<const uint8_t*>(in[0]), static_cast<const W*>(in[1]),
        static_cast<const W*>(in[2]), static_cast<W*>(out[0]), n_, w_);
    check_launch("where_kernel", where_);
  }

 private:
  Context& c_;
  int64_t n_;
  WhereIndex w_;
  ErrorContext where_;
};

KernelPlan make_where(const OpDesc& op, Context& c) {
  const ErrorContext w = op.context();
  check_supported(op.inputs.size() == 3 && op.has_input(0) && op.has_input(1) && op.has_input(2),
                  "CUDA Where takes a condition and two operands", w);
  check_supported(op.inputs[0].dtype == DType::boolean, "CUDA Where's condition must be bool", w);
  WhereIndex index = where_index(op);
  int64_t n = op.outputs[0].numel();
  std::unique_ptr<Kernel> k;
  switch (dtype_size(op.outputs[0].dtype)) {
    case 1:
      k = std::make_unique<WhereKernel<uint8_t>>(c, n, index, w);
      break;
    case 2:
      k = std::make_unique<WhereKernel<uint16_t>>(c, n, index, w);
      break;
    case 4:
      k = std::make_unique<WhereKernel<uint32_t>>(c, n, index, w);
      break;
    case 8:
      k = std::make_unique<WhereKernel<uint64_t>>(c, n, index, w);
      break;
    default:
      throw Error::unsupported("CUDA Where of " + op.outputs[0].str(), w);
  }
  return plain_plan(op, std::move(k));
}

}  // namespace

void register_logical_kernels() {
  register_kernel("Not", make_not);
  register_kernel("Where", make_where);
}

}  // namespace tandem::cuda
