// Optimizer kernels: grid-stride loops applying ops/update_rules.h per
// element (its rn_* operations keep nvcc from fusing multiply-adds, so the
// results are the CPU's bits), the loss scaler's unscale with an inf/nan
// flag, and a deterministic sum of squares for gradient clipping.
#include <algorithm>
#include <span>
#include <vector>

#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/launch.h"
#include "cuda/train_context.h"
#include "cuda/optimizer.h"

namespace tandem::cuda {

namespace {

// Up to kPerLaunch tensors of one parameter group; tensor k's values are
// covered by blocks [first_block[k], first_block[k + 1]) in a grid-stride
// loop of their own.
constexpr int kPerLaunch = 24;
struct TensorList {
  float* t[4][kPerLaunch];  // param, grad, a, b (a, b may be null)
  int64_t n[kPerLaunch];
  unsigned first_block[kPerLaunch + 1];
  int count;
};

template <typename F>
__device__ __forceinline__ void for_each_value(const TensorList& l, F&& f) {
  int k = 0;
  while (blockIdx.x >= l.first_block[k + 1]) ++k;
  const int64_t stride = int64_t(l.first_block[k + 1] - l.first_block[k]) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x - l.first_block[k]) * blockDim.x + threadIdx.x; i < l.n[k];
       i += stride)
    f(k, i);
}

__global__ void sgd_kernel(TensorList l, ops::SgdScalars s) {
  for_each_value(l, [&](int k, int64_t i) {
    float unused = 0.f;
    ops::sgd_update(l.t[0][k][i], l.t[1][k][i], l.t[2][k] ? l.t[2][k][i] : unused, s);
  });
}

__global__ void adamw_kernel(TensorList l, ops::AdamWScalars s) {
  for_each_value(l, [&](int k, int64_t i) {
    ops::adamw_update(l.t[0][k][i], l.t[1][k][i], l.t[2][k][i], l.t[3][k][i], s);
  });
}

__global__ void unscale_kernel(TensorList l, float inv_scale, int* found) {
  bool any = false;
  for_each_value(l, [&](int k, int64_t i) { any |= ops::unscale_update(l.t[0][k][i], inv_scale); });
  if (any) atomicOr(found, 1);
}

__global__ void zero_kernel(TensorList l) {
  for_each_value(l, [&](int k, int64_t i) { l.t[0][k][i] = 0.f; });
}

__global__ void scale_kernel(float* x, int64_t n, float factor) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = ops::rn_mul(x[i], factor);
}

// Block b's partial sum of squares into partial[b]; the blocks per tensor
// are fixed per n, so the partials (and their order) are too.
__global__ void squares_kernel(TensorList l, double* partial) {
  double s = 0;
  for_each_value(l, [&](int k, int64_t i) { s += double(l.t[0][k][i]) * double(l.t[0][k][i]); });
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
               std::string(op) + " wants plain f32 tensors on " + d.str() + ", got " +
                   t.desc().str() + " on " + t.device().str(),
               where(op, t));
}

// The context of the GPU every defined tensor is on (f32, plain, one shape).
Context& gpu_of(const char* op, std::initializer_list<const Tensor*> ts) {
  const Tensor& first = **ts.begin();
  TANDEM_CHECK(first.defined() && !first.device().is_cpu(), std::string(op) + " wants GPU tensors",
               where(op, first));
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    require_gpu_f32(op, *t, first.device());
    TANDEM_CHECK(t->shape() == first.shape(),
                 std::string(op) + ": shapes differ from " + shape_str(first.shape()),
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
  Scratch s_;
};

// Checks the group (one GPU, f32, each parameter's tensors of one shape) and
// calls launch(list, blocks) per kPerLaunch parameters.
template <typename Launch>
void for_each_launch(const char* op, const ParamGroup& g, bool need_b, Launch launch) {
  if (g.param.empty()) return;
  TANDEM_CHECK(g.grad.size() == g.param.size() && g.a.size() == g.param.size() &&
                   (!need_b || g.b.size() == g.param.size()),
               std::string(op) + ": a tensor list of the wrong length");
  Context* c = nullptr;
  TensorList l{};
  auto flush = [&] {
    if (l.count) launch(*c, l, l.first_block[l.count]);
    l = TensorList{};
  };
  for (size_t i = 0; i < g.param.size(); ++i) {
    const Tensor* b = need_b ? &g.b[i] : nullptr;
    Context& here = gpu_of(op, {&g.param[i], &g.grad[i], &g.a[i], b ? b : &g.a[i]});
    TANDEM_CHECK(!c || c == &here, std::string(op) + ": parameters on two GPUs in one group",
                 where(op, g.param[i]));
    c = &here;
    const int64_t n = g.param[i].numel();
    if (n == 0) continue;
    const int k = l.count++;
    l.t[0][k] = f32(g.param[i]);
    l.t[1][k] = f32(g.grad[i]);
    l.t[2][k] = f32(g.a[i]);
    l.t[3][k] = b ? f32(*b) : nullptr;
    l.n[k] = n;
    l.first_block[k + 1] = l.first_block[k] + blocks_for(n, here.props);
    if (l.count == kPerLaunch) flush();
  }
  flush();
}

// Calls launch(list, blocks) per kPerLaunch non-empty tensors of `ts` (one
// GPU, f32), each in t[0].
template <typename Launch>
void for_each_tensor_launch(Context& c, std::span<const Tensor> ts, Launch launch) {
  TensorList l{};
  auto flush = [&] {
    if (l.count) launch(l, l.first_block[l.count]);
    l = TensorList{};
  };
  for (const Tensor& t : ts) {
    const int64_t n = t.numel();
    if (n == 0) continue;
    const int k = l.count++;
    l.t[0][k] = f32(t);
    l.n[k] = n;
    l.first_block[k + 1] = l.first_block[k] + blocks_for(n, c.props);
    if (l.count == kPerLaunch) flush();
  }
  flush();
}

}  // namespace

void sgd_steps(const ParamGroup& g, const ops::SgdScalars& s) {
  TANDEM_CHECK(s.momentum == 0.f ||
                   std::all_of(g.a.begin(), g.a.end(), [](const Tensor& t) { return t.defined(); }),
               "SGD with momentum needs its buffers");
  for_each_launch("sgd_step", g, false, [&](Context& c, const TensorList& l, unsigned blocks) {
    sgd_kernel<<<blocks, kThreads, 0, c.stream>>>(l, s);
    check_launch("sgd_kernel", {"", "", "sgd_step", ""});
  });
}

void adamw_steps(const ParamGroup& g, const ops::AdamWScalars& s) {
  for_each_launch("adamw_step", g, true, [&](Context& c, const TensorList& l, unsigned blocks) {
    adamw_kernel<<<blocks, kThreads, 0, c.stream>>>(l, s);
    check_launch("adamw_kernel", {"", "", "adamw_step", ""});
  });
}

bool unscale_gradients(std::span<const Tensor> grads, float inv_scale) {
  Context* c = gpu_of_all("unscale_gradients", grads);
  if (!c) return false;
  ErrorContext w = where("unscale_gradients", grads[0]);
  Tally<int> found(*c, w);
  for_each_tensor_launch(*c, grads, [&](const TensorList& l, unsigned blocks) {
    unscale_kernel<<<blocks, kThreads, 0, c->stream>>>(l, inv_scale, found.get());
    check_launch("unscale_kernel", w);
  });
  return found.read() != 0;
}

double sum_of_squares(std::span<const Tensor> tensors) {
  Context* c = gpu_of_all("sum_of_squares", tensors);
  if (!c) return 0;
  ErrorContext w = where("sum_of_squares", tensors[0]);
  // Every tensor's block partials side by side in one scratch, added by one
  // kernel: 24 tensors per launch and no scratch of their own.
  size_t count = 0;
  for (const Tensor& t : tensors) count += t.numel() ? blocks_for(t.numel(), c->props) : 0;
  if (count == 0) return 0;
  Scratch partial(*c, (count + 1) * sizeof(double));
  double* at = static_cast<double*>(partial.get());
  double* total = at + count;
  for_each_tensor_launch(*c, tensors, [&](const TensorList& l, unsigned blocks) {
    squares_kernel<<<blocks, kThreads, 0, c->stream>>>(l, at);
    check_launch("squares_kernel", w);
    at += blocks;
  });
  add_partials_kernel<<<1, kThreads, 0, c->stream>>>(static_cast<const double*>(partial.get()),
                                                     int(count), total);
  check_launch("add_partials_kernel", w);
  double v = 0;
  train::read_back(*c, &v, total, sizeof v, w);
  return v;
}

void zero_tensors(std::span<const Tensor> tensors) {
  Context* c = gpu_of_all("zero_tensors", tensors);
  if (!c) return;
  for_each_tensor_launch(*c, tensors, [&](const TensorList& l, unsigned blocks) {
    zero_kernel<<<blocks, kThreads, 0, c->stream>>>(l);
    check_launch("zero_kernel", where("zero_tensors", tensors[0]));
  });
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
