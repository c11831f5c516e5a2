// Optimizer kernels: grid-stride loops applying core/update_rules.h per
// element (its rn_* operations keep nvcc from fusing multiply-adds, so the
// results are the CPU's bits), the loss scaler's unscale with an inf/nan
// flag, and a deterministic sum of squares for gradient clipping.
#include <vector>

#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/launch.h"
#include "cuda/train/common.h"
#include "cuda/train/optimizer.h"

namespace tandem::cuda {

namespace {

__global__ void sgd_kernel(float* p, const float* g, float* buf, int64_t n, SgdScalars s) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float unused = 0.f;
    sgd_update(p[i], g[i], buf ? buf[i] : unused, s);
  }
}

__global__ void adamw_kernel(float* p, const float* g, float* m, float* v, int64_t n, AdamWScalars s) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    adamw_update(p[i], g[i], m[i], v[i], s);
}

__global__ void unscale_kernel(float* g, int64_t n, float inv_scale, int* found) {
  bool any = false;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    any |= unscale_update(g[i], inv_scale);
  if (any) atomicOr(found, 1);
}

__global__ void scale_kernel(float* x, int64_t n, float factor) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = rn_mul(x[i], factor);
}

// Block b's partial sum of squares into partial[b]; the grid size is fixed
// per n, so the partials (and their order) are too.
__global__ void squares_kernel(const float* x, int64_t n, double* partial) {
  double s = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    s += double(x[i]) * double(x[i]);
  s = block_reduce(s, SumOp{}, 0.0);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// *total = the partials, in order: a fixed summation order. One block,
// each thread a strided share, then the block's sum in a fixed tree.
__global__ void add_partials_kernel(const double* partial, int count, double* total) {
  double s = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  s = block_reduce(s, SumOp{}, 0.0);
  if (threadIdx.x == 0) *total = s;
}

ErrorContext where(const char* op, const Tensor& t) { return {"", "", op, t.defined() ? t.desc().str() : ""}; }

void require_gpu_f32(const char* op, const Tensor& t, Device d) {
  TANDEM_CHECK(t.device() == d && t.dtype() == DType::f32 && t.layout() == Layout::plain,
        std::string(op) + " wants plain f32 tensors on " + d.str() + ", got " + t.desc().str() + " on " +
            t.device().str(),
        where(op, t));
}

// The context of the GPU every defined tensor is on (f32, plain, one shape).
Context& gpu_of(const char* op, std::initializer_list<const Tensor*> ts) {
  const Tensor& first = **ts.begin();
  TANDEM_CHECK(first.defined() && !first.device().is_cpu(), std::string(op) + " wants GPU tensors", where(op, first));
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    require_gpu_f32(op, *t, first.device());
    TANDEM_CHECK(t->shape() == first.shape(), std::string(op) + ": shapes differ from " + shape_str(first.shape()),
          where(op, *t));
  }
  return context(first.device().index);
}

float* f32(const Tensor& t) { return t.defined() ? static_cast<float*>(t.raw()) : nullptr; }

// The GPU of a list of tensors (all on one, any shapes); null for an empty list.
Context* gpu_of_all(const char* op, std::span<const Tensor> ts) {
  if (ts.empty()) return nullptr;
  TANDEM_CHECK(!ts[0].device().is_cpu(), std::string(op) + " wants GPU tensors", where(op, ts[0]));
  for (const Tensor& t : ts) require_gpu_f32(op, t, ts[0].device());
  return &context(ts[0].device().index);
}

// A device value starting at zero that kernels flag or add to, read back
// (waiting for the stream) once they are done.
template <typename T>
class Tally {
 public:
  Tally(Context& c, const ErrorContext& w) : c_(c), w_(w), s_(c, sizeof(T)) {
    check_cuda(cudaMemsetAsync(s_.get(), 0, sizeof(T), c.stream), "cudaMemsetAsync(tally)", w);
  }
  T* get() const { return static_cast<T*>(s_.get()); }
  T read() const {
    T v{};
    train::read_back(c_, &v, s_.get(), sizeof v, w_);
    return v;
  }

 private:
  Context& c_;
  ErrorContext w_;
  train::Scratch s_;
};

}  // namespace

void sgd_step(const Tensor& param, const Tensor& grad, const Tensor& buf, const SgdScalars& s) {
  Context& c = gpu_of("sgd_step", {&param, &grad, &buf});
  TANDEM_CHECK(buf.defined() || s.momentum == 0.f, "SGD with momentum needs its buffer", where("sgd_step", param));
  int64_t n = param.numel();
  if (n == 0) return;
  sgd_kernel<<<blocks_for(n, c.props), kThreads, 0, c.stream>>>(f32(param), f32(grad), f32(buf), n, s);
  check_launch("sgd_kernel", where("sgd_step", param));
}

void adamw_step(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamWScalars& s) {
  Context& c = gpu_of("adamw_step", {&param, &grad, &m, &v});
  TANDEM_CHECK(m.defined() && v.defined(), "AdamW needs both moment estimates", where("adamw_step", param));
  int64_t n = param.numel();
  if (n == 0) return;
  adamw_kernel<<<blocks_for(n, c.props), kThreads, 0, c.stream>>>(f32(param), f32(grad), f32(m), f32(v), n, s);
  check_launch("adamw_kernel", where("adamw_step", param));
}

bool unscale_gradients(std::span<const Tensor> grads, float inv_scale) {
  Context* c = gpu_of_all("unscale_gradients", grads);
  if (!c) return false;
  ErrorContext w = where("unscale_gradients", grads[0]);
  Tally<int> found(*c, w);
  for (const Tensor& g : grads) {
    if (int64_t n = g.numel()) {
      unscale_kernel<<<blocks_for(n, c->props), kThreads, 0, c->stream>>>(f32(g), n, inv_scale, found.get());
      check_launch("unscale_kernel", w);
    }
  }
  return found.read() != 0;
}

double sum_of_squares(std::span<const Tensor> tensors) {
  Context* c = gpu_of_all("sum_of_squares", tensors);
  if (!c) return 0;
  ErrorContext w = where("sum_of_squares", tensors[0]);
  // Every tensor's block partials side by side in one scratch, added by one
  // kernel: two launches per step fewer per parameter than a tally each.
  std::vector<unsigned> blocks(tensors.size());
  size_t count = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    blocks[i] = tensors[i].numel() ? blocks_for(tensors[i].numel(), c->props) : 0;
    count += blocks[i];
  }
  if (count == 0) return 0;
  train::Scratch partial(*c, (count + 1) * sizeof(double));
  double* at = static_cast<double*>(partial.get());
  double* total = at + count;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!blocks[i]) continue;
    squares_kernel<<<blocks[i], kThreads, 0, c->stream>>>(f32(tensors[i]), tensors[i].numel(), at);
    check_launch("squares_kernel", w);
    at += blocks[i];
  }
  add_partials_kernel<<<1, kThreads, 0, c->stream>>>(static_cast<const double*>(partial.get()), int(count), total);
  check_launch("add_partials_kernel", w);
  double v = 0;
  train::read_back(*c, &v, total, sizeof v, w);
  return v;
}

void scale_tensors(std::span<const Tensor> tensors, float factor) {
  Context* c = gpu_of_all("scale_tensors", tensors);
  if (!c) return;
  for (const Tensor& t : tensors) {
    int64_t n = t.numel();
    if (n == 0) continue;
    scale_kernel<<<blocks_for(n, c->props), kThreads, 0, c->stream>>>(f32(t), n, factor);
    check_launch("scale_kernel", where("scale_tensors", t));
  }
}

}  // namespace tandem::cuda
