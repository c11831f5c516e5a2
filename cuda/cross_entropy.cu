// Softmax cross-entropy with label smoothing, as the CPU table computes it:
//   logits [N, K], labels i64 [N], loss [] (or [1]) f32, dloss f32,
//   saved: log p [N, K] f32.
//   log p_nk = z_nk - max_k z_n - log sum_k exp(z_nk - max)
//   target_k = (1 - s) [k == label] + s / K
//   loss = mean_n -sum_k target_k log p_nk   (row terms and their sum in double)
//   dlogits_nk = dloss * (p_nk - target_k) / N
// One warp per row for the forward; the rows' terms are summed by one block in
// a fixed order, so the loss is deterministic.
// Labels outside [0, K) are an Error naming the first such sample, in the
// backward too: the kernels flag them (never reading through them) and the
// host reads the flag back, the one synchronization of each entry.
#include <climits>

#include "cuda/block_reduce.cuh"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/train_context.h"

namespace tandem::cuda::train {

namespace {

constexpr int kRowsPerBlock = kThreads / 32;
constexpr unsigned long long kNoBadLabel = ULLONG_MAX;

// Row n's log-probabilities into logp, and its term
// (1 - s) log p[label] + s / K sum_k log p into terms[n].
template <typename T>
__global__ void forward_rows_kernel(const T* logits, const int64_t* labels, int64_t rows, int64_t k, double s,
                                    float* logp, double* terms, unsigned long long* bad) {
  int lane = threadIdx.x & 31;
  int64_t n = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (n >= rows) return;  // the whole warp leaves together
  const T* z = logits + n * k;
  float mx = -INFINITY;
  for (int64_t j = lane; j < k; j += 32) mx = fmaxf(mx, load(z, j));
  mx = warp_reduce(mx, MaxOp{});
  float sum = 0.f;
  for (int64_t j = lane; j < k; j += 32) sum += expf(load(z, j) - mx);
  float lse = logf(warp_reduce(sum, SumOp{}));
  double row = 0;
  for (int64_t j = lane; j < k; j += 32) {
    float v = load(z, j) - mx - lse;
    logp[n * k + j] = v;
    row += v;
  }
  row = warp_reduce(row, SumOp{});
  if (lane != 0) return;
  int64_t y = labels[n];
  if (y < 0 || y >= k) {
    atomicMin(bad, (unsigned long long)n);
    terms[n] = 0;
    return;
  }
  float logp_y = load(z, y) - mx - lse;  // the value written above, recomputed the same way
  terms[n] = (1 - s) * double(logp_y) + s / double(k) * row;
}

__global__ void mean_kernel(const double* terms, int64_t rows, float* loss) {
  double s = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) s += terms[i];
  s = block_reduce(s, SumOp{}, 0.0);
  if (threadIdx.x == 0) *loss = float(-s / double(rows));
}

template <typename T>
__global__ void backward_kernel(const float* logp, const int64_t* labels, const float* dloss, int64_t rows,
                                int64_t k, float on, float off, T* dlogits, bool accumulate, unsigned long long* bad) {
  float scale = *dloss / float(rows);
  int64_t n_all = rows * k;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n_all; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n = i / k, j = i - n * k;
    int64_t y = labels[n];
    if (j == 0 && (y < 0 || y >= k)) atomicMin(bad, (unsigned long long)n);
    float g = scale * (expf(logp[i]) - (j == y ? on : off));
    store(dlogits, i, accumulate ? load(dlogits, i) + g : g);
  }
}

void check_inputs(const TrainContext& c, const char* op, const ops::CrossEntropyParams& p, const Tensor& logits,
                  const Tensor& labels) {
  require_f32(c, op, {&logits});
  TANDEM_CHECK(logits.rank() == 2 && logits.dim(0) > 0, "cross entropy wants logits [N, K], N > 0",
               op_context(op, logits));
  TANDEM_CHECK(
      labels.defined() && labels.dtype() == DType::i64 && labels.shape() == Shape{logits.dim(0)},
      "labels must be i64 [" + std::to_string(logits.dim(0)) + "], got " +
          (labels.defined() ? labels.desc().str() : std::string("none")),
      op_context(op, logits));
  require_on_gpu(c, op, {&labels}, DType::i64);
  TANDEM_CHECK(p.label_smoothing >= 0 && p.label_smoothing <= 1,
               "label smoothing must be in [0, 1], got " + std::to_string(p.label_smoothing),
               op_context(op, logits));
}

void check_scalar(const TrainContext& c, const char* op, const Tensor& t, const char* what) {
  require_f32(c, op, {&t});
  TANDEM_CHECK(t.defined() && t.numel() == 1, std::string(what) + " must hold one value",
               op_context(op, t));
}

// A flag the kernels lower to the first sample with a bad label.
class BadLabelFlag {
 public:
  BadLabelFlag(Context& c, const ErrorContext& where) : c_(c), where_(where), flag_(c, sizeof(unsigned long long)) {
    check_cuda(cudaMemsetAsync(flag_.get(), 0xff, flag_.bytes(), c.stream), "cudaMemsetAsync(label flag)", where);
  }
  unsigned long long* get() const { return static_cast<unsigned long long*>(flag_.get()); }

  // Waits for the kernels; Error naming the first bad label, as the CPU table does.
  void check_labels(const Tensor& labels, int64_t k) const {
    unsigned long long first = kNoBadLabel;
    read_back(c_, &first, flag_.get(), sizeof first, where_);
    if (first == kNoBadLabel) return;
    int64_t label = 0;
    read_back(c_, &label, static_cast<const int64_t*>(labels.raw()) + first, sizeof label, where_);
    throw Error("label " + std::to_string(label) + " of sample " + std::to_string(first) + " is outside [0, " +
                    std::to_string(k) + ")",
                where_);
  }

 private:
  Context& c_;
  ErrorContext where_;
  Scratch flag_;
};

}  // namespace

void cross_entropy_forward(void* ctx, const ops::CrossEntropyParams& p, const Tensor& logits, const Tensor& labels,
                           const Tensor& loss, Tensor* saved) {
  const char* op = "cross_entropy_forward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, p, logits, labels);
  check_scalar(c, op, loss, "the loss");
  int64_t n = logits.dim(0), k = logits.dim(1);
  ErrorContext where = op_context(op, logits);
  *saved = device_empty(c.gpu, DType::f32, logits.shape());
  Scratch terms(c.gpu, size_t(n) * sizeof(double));
  BadLabelFlag bad(c.gpu, where);
  with_float_type(logits.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    unsigned blocks = unsigned((n + kRowsPerBlock - 1) / kRowsPerBlock);
    forward_rows_kernel<T><<<blocks, kThreads, 0, c.gpu.stream>>>(
        static_cast<const T*>(logits.raw()), static_cast<const int64_t*>(labels.raw()), n, k,
        double(p.label_smoothing), static_cast<float*>(saved->raw()), static_cast<double*>(terms.get()), bad.get());
  });
  check_launch("cross_entropy forward_rows_kernel", where);
  mean_kernel<<<1, kThreads, 0, c.gpu.stream>>>(static_cast<const double*>(terms.get()), n,
                                                static_cast<float*>(loss.raw()));
  check_launch("cross_entropy mean_kernel", where);
  if (!p.labels_checked) bad.check_labels(labels, k);
}

void cross_entropy_backward(void* ctx, const ops::CrossEntropyParams& p, const Tensor& saved, const Tensor& labels,
                            const Tensor& dloss, const GradOut& dlogits) {
  const char* op = "cross_entropy_backward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, p, saved, labels);
  check_scalar(c, op, dloss, "dloss");
  GradPtr g = grad_ptr(c, op, dlogits, saved.shape());
  if (!g) return;
  int64_t n = saved.dim(0), k = saved.dim(1);
  float off = p.label_smoothing / float(k), on = 1.f - p.label_smoothing + off;
  ErrorContext where = op_context(op, saved);
  BadLabelFlag bad(c.gpu, where);
  with_float_type(dlogits.t.dtype(), op, where, [&](auto zero) {
    using T = decltype(zero);
    backward_kernel<T><<<blocks_for(n * k, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
        static_cast<const float*>(saved.raw()), static_cast<const int64_t*>(labels.raw()),
        static_cast<const float*>(dloss.raw()), n, k, on, off, static_cast<T*>(g.p), g.accumulate, bad.get());
  });
  check_launch("cross_entropy backward_kernel", where);
  if (!p.labels_checked) bad.check_labels(labels, k);
}

}  // namespace tandem::cuda::train
