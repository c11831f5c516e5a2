// Conv2d for training on cuDNN's legacy API, NCHW or NHWC tensors:
// cudnnConvolutionForward, cudnnConvolutionBackwardData and
// cudnnConvolutionBackwardFilter (accumulating gradients through their beta
// = 1 blend); the bias is added, and its gradient summed, by
// cuda/train/add.cu.
//   x [N, C, H, W], w [M, C/G, KH, KW] (cuDNN's NCHW filter, groups on the
//   convolution descriptor), b [M], y / dy [N, M, OH, OW].
// One plan per shape and parameters keeps the descriptors; each direction's
// algorithm is chosen by timing (cudnnFind*AlgorithmEx) at its first call,
// on the call's own tensors (the output only when it is overwritten anyway,
// else a scratch copy), falling back to cuDNN's heuristics if the search
// fails, and kept in the on-disk algorithm cache the inference convolutions
// use (cuda/algo_cache.h), so the next run starts without the search.
// fp32 runs with CUDNN_FMA_MATH (no TF32) and without the FFT and Winograd
// algorithms, whose transforms round differently from a direct sum: fp32 is
// the path that must match the CPU table. f16 and bf16 accumulate in f32 and
// may use tensor cores and every algorithm.
// Autocast (Conv2dParams::compute f16 or bf16, as torch.autocast on CUDA):
// cuDNN multiplies in the compute dtype on tensor cores and accumulates in
// f32. Activations (x, y, dy, dx) may be stored in f32 or in the compute
// dtype itself (keeps_16bit_activations: no copies): an operand of another
// dtype is rounded into a scratch copy, a result of another dtype is widened
// from a 16-bit scratch (added, for an accumulated gradient). w, the bias and
// their gradients stay f32: w is rounded per call, dw widened.
// Channels last (x in layout nhwc): x, y, dy and dx nhwc, and cuDNN's
// filter in KRSC order, w converted into it per call and dw out of it; the
// tensor cores' native arrangement, with no transposes inside cuDNN.
#include <algorithm>
#include <climits>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "cuda/algo_cache.h"
#include "cuda/cudnn_utils.h"
#include "cuda/float_types.h"
#include "cuda/train/cast.h"
#include "cuda/train/common.h"
#include "profile/zone.h"

namespace tandem::cuda::train {

namespace {

// Largest workspace an algorithm may ask for.
constexpr size_t kMaxWorkspace = size_t(256) << 20;

int to_int(int64_t v, const ErrorContext& where) {
  TANDEM_CHECK_SUPPORTED(v >= 0 && v <= INT_MAX, "a convolution extent over 2^31", where);
  return int(v);
}

// The algorithm of one direction, chosen at its first call.
struct Choice {
  bool chosen = false;
  int algo = 0;
  size_t workspace = 0;
};

struct ConvPlan {
  ConvPlan(const Conv2dParams& p, DType dtype, Layout layout, const Shape& x, const Shape& w,
           const Shape& y, const ErrorContext& where)
      : where(where),
        dtype(dtype),
        problem(problem_of(p, dtype, layout, x, w)),
        xd(where),
        yd(where),
        wd(where),
        fwd_cd(where),
        data_cd(where),
        filter_cd(where) {
    cudnnDataType_t t = cudnn_dtype(dtype, "conv2d", where);
    // nhwc: x, y and the filter (KRSC) channels last, tensor cores' own order.
    const cudnnTensorFormat_t format =
        layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    auto tensor4d = [&](const TensorDescriptor& d, const Shape& s) {
      check_cudnn(
          cudnnSetTensor4dDescriptor(d.get(), format, t, to_int(s[0], where), to_int(s[1], where),
                                     to_int(s[2], where), to_int(s[3], where)),
          "cudnnSetTensor4dDescriptor", where);
    };
    tensor4d(xd, x);
    tensor4d(yd, y);
    check_cudnn(
        cudnnSetFilter4dDescriptor(wd.get(), t, format, to_int(w[0], where), to_int(w[1], where),
                                   to_int(w[2], where), to_int(w[3], where)),
        "cudnnSetFilter4dDescriptor", where);
    for (const ConvolutionDescriptor* cd : {&fwd_cd, &data_cd, &filter_cd}) {
      check_cudnn(cudnnSetConvolution2dDescriptor(cd->get(), int(p.padding[0]), int(p.padding[1]), int(p.stride[0]),
                                                  int(p.stride[1]), int(p.dilation[0]), int(p.dilation[1]),
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                  "cudnnSetConvolution2dDescriptor", where);
      check_cudnn(cudnnSetConvolutionGroupCount(cd->get(), int(p.groups)), "cudnnSetConvolutionGroupCount", where);
      // fp32 stays on FMA math: cuDNN's default math permits TF32 on A100 and later.
      check_cudnn(cudnnSetConvolutionMathType(cd->get(), is_16bit_float(dtype) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
                  "cudnnSetConvolutionMathType", where);
    }
    int dims[4] = {};
    check_cudnn(cudnnGetConvolutionNdForwardOutputDim(fwd_cd.get(), xd.get(), wd.get(), 4, dims),
                "cudnnGetConvolutionNdForwardOutputDim", where);
    TANDEM_CHECK(dims[0] == y[0] && dims[1] == y[1] && dims[2] == y[2] && dims[3] == y[3],
                 "cuDNN's convolution output differs from " + shape_str(y), where);
  }

  // The problem as the on-disk algorithm cache keys it (one direction set per call).
  static ConvProblem problem_of(const Conv2dParams& p, DType dtype, Layout layout, const Shape& x,
                                const Shape& w) {
    ConvProblem pr;
    pr.dtype = dtype_name(dtype);
    pr.layout = layout == Layout::nhwc ? "nhwc" : "nchw";
    pr.n = x[0], pr.c = x[1], pr.h = x[2], pr.w = x[3];
    pr.k = w[0], pr.r = w[2], pr.s = w[3];
    pr.pad_h = p.padding[0], pr.pad_w = p.padding[1], pr.stride_h = p.stride[0],
    pr.stride_w = p.stride[1];
    pr.dilation_h = p.dilation[0], pr.dilation_w = p.dilation[1], pr.groups = p.groups;
    pr.compute_type = int(CUDNN_DATA_FLOAT);
    pr.math_type = int(is_16bit_float(dtype) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH);
    return pr;
  }

  ErrorContext where;
  DType dtype;
  ConvProblem problem;
  TensorDescriptor xd, yd;
  FilterDescriptor wd;
  // One per direction: each keeps the math type of its chosen algorithm.
  ConvolutionDescriptor fwd_cd, data_cd, filter_cd;
  std::mutex mu;  // guards the choices
  Choice fwd, data, filter;
};

bool tensor_op(cudnnMathType_t m) { return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION; }

// The FFT and Winograd algorithms of each direction: their transforms round
// differently from a direct sum.
bool transform(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool transform(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool transform(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// Whether an fp32 convolution may run this algorithm: a direct sum in FMA math.
template <typename Perf>
bool accurate(const Perf& p) {
  return !transform(p.algo) && !tensor_op(p.mathType);
}

// The first (fastest, or best-ranked) usable result; null when none is.
template <typename Perf>
const Perf* first_usable(const std::vector<Perf>& perf, int found, DType dtype) {
  for (int i = 0; i < found && i < int(perf.size()); ++i) {
    const Perf& p = perf[size_t(i)];
    if (p.status == CUDNN_STATUS_SUCCESS && p.memory <= kMaxWorkspace && (is_16bit_float(dtype) || accurate(p)))
      return &p;
  }
  return nullptr;
}

// The largest workspace up to kMaxWorkspace the pool can lend for a search.
std::unique_ptr<Scratch> search_workspace(Context& c) {
  for (size_t bytes = kMaxWorkspace; bytes >= (size_t(1) << 20); bytes /= 2) {
    try {
      return std::make_unique<Scratch>(c, bytes);
    } catch (const OutOfMemory&) {
    }
  }
  return std::make_unique<Scratch>(c, 0);
}

// A choice the algorithm cache remembered, if cuDNN still accepts it here:
// a valid algorithm, usable in this precision, whose workspace it sizes.
template <typename Perf, typename SizeOf>
bool use_cached(Choice& choice, const ConvChoice& hit, DType dtype, const ConvolutionDescriptor& cd,
                int count, SizeOf&& size_of, const ErrorContext& where) {
  if (hit.algo < 0 || hit.algo >= count || hit.workspace_bytes > kMaxWorkspace) return false;
  Perf p{};
  p.algo = decltype(p.algo)(hit.algo);
  p.mathType = cudnnMathType_t(hit.math_type);
  if (!is_16bit_float(dtype) && !accurate(p)) return false;
  if (is_16bit_float(dtype))
    check_cudnn(cudnnSetConvolutionMathType(cd.get(), p.mathType), "cudnnSetConvolutionMathType",
                where);
  size_t bytes = 0;
  if (size_of(p.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > kMaxWorkspace) return false;
  choice.algo = hit.algo;
  choice.workspace = std::max(bytes, hit.workspace_bytes);
  choice.chosen = true;
  return true;
}

// Chooses one direction's algorithm: the one the on-disk cache
// (cuda/algo_cache.h) holds for this GPU model, cuDNN and problem, else by
// timing them (`find`; cuDNN's heuristics, `rank`, if the search fails) and
// keeping the fastest usable one with cuDNN's workspace size for it
// (`size_of`), then remembered. Its math type goes on `cd` (16-bit types
// only: fp32 stays on FMA).
template <typename Perf, typename Find, typename Rank, typename SizeOf>
void choose(Choice& choice, Context& gpu, const ConvPlan& plan, const ConvolutionDescriptor& cd,
            int count, Find&& find, Rank&& rank, SizeOf&& size_of, const char* direction) {
  const DType dtype = plan.dtype;
  const ErrorContext& where = plan.where;
  ConvProblem problem = plan.problem;
  problem.direction = direction;
  AlgoCache* cache =
      algo_cache({gpu.props.name, gpu.props.major, gpu.props.minor, cudnnGetVersion()});
  if (cache)
    if (std::optional<ConvChoice> hit = cache->find(problem))
      if (use_cached<Perf>(choice, *hit, dtype, cd, count, size_of, where)) return;
  TANDEM_ZONE_CAT("cudnn algorithm search", "cuda");
  std::vector<Perf> perf(static_cast<size_t>(count));
  int found = 0;
  std::unique_ptr<Scratch> ws = search_workspace(gpu);
  if (find(count, &found, perf.data(), ws->get(), ws->bytes()) != CUDNN_STATUS_SUCCESS) {
    cudaGetLastError();  // the search's failure is handled here, not at a later launch check
    check_cudnn(rank(count, &found, perf.data()), "cuDNN's convolution heuristics", where);
  }
  const Perf* best = first_usable(perf, found, dtype);
  TANDEM_CHECK_SUPPORTED(best != nullptr,
                         std::string("cuDNN has no usable ") + direction + " convolution algorithm",
                         where);
  if (is_16bit_float(dtype))
    check_cudnn(cudnnSetConvolutionMathType(cd.get(), best->mathType), "cudnnSetConvolutionMathType", where);
  size_t bytes = 0;
  check_cudnn(size_of(best->algo, &bytes), "cudnnGetConvolution*WorkspaceSize", where);
  choice.algo = int(best->algo);
  choice.workspace = std::max(bytes, best->memory);
  choice.chosen = true;
  if (cache)
    cache->store(problem, ConvChoice{choice.algo, int(best->mathType), choice.workspace, false});
}

// `out` itself when the call overwrites it, else a scratch tensor of its
// size: a search writes its output.
struct SearchOutput {
  SearchOutput(Context& c, const Tensor& out, bool overwritten)
      : scratch(c, overwritten ? 0 : out.bytes()), p(overwritten ? out.raw() : scratch.get()) {}
  Scratch scratch;
  void* p;
};

void choose_forward(TrainContext& c, ConvPlan& pl, const Tensor& x, const Tensor& w, const Tensor& y) {
  cudnnHandle_t h = c.gpu.cudnn;
  choose<cudnnConvolutionFwdAlgoPerf_t>(
      pl.fwd, c.gpu, pl, pl.fwd_cd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
      [&](int n, int* found, cudnnConvolutionFwdAlgoPerf_t* perf, void* ws, size_t bytes) {
        return cudnnFindConvolutionForwardAlgorithmEx(h, pl.xd.get(), x.raw(), pl.wd.get(), w.raw(), pl.fwd_cd.get(),
                                                      pl.yd.get(), y.raw(), n, found, perf, ws, bytes);
      },
      [&](int n, int* found, cudnnConvolutionFwdAlgoPerf_t* perf) {
        return cudnnGetConvolutionForwardAlgorithm_v7(h, pl.xd.get(), pl.wd.get(), pl.fwd_cd.get(), pl.yd.get(), n,
                                                      found, perf);
      },
      [&](cudnnConvolutionFwdAlgo_t a, size_t* bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(h, pl.xd.get(), pl.wd.get(), pl.fwd_cd.get(), pl.yd.get(), a,
                                                       bytes);
      },
      "forward");
}

void choose_data(TrainContext& c, ConvPlan& pl, const Tensor& w, const Tensor& dy, const GradOut& dx) {
  cudnnHandle_t h = c.gpu.cudnn;
  SearchOutput out(c.gpu, dx.t, dx.mode == GradMode::overwrite);
  choose<cudnnConvolutionBwdDataAlgoPerf_t>(
      pl.data, c.gpu, pl, pl.data_cd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
      [&](int n, int* found, cudnnConvolutionBwdDataAlgoPerf_t* perf, void* ws, size_t bytes) {
        return cudnnFindConvolutionBackwardDataAlgorithmEx(h, pl.wd.get(), w.raw(), pl.yd.get(), dy.raw(),
                                                           pl.data_cd.get(), pl.xd.get(), out.p, n, found, perf, ws,
                                                           bytes);
      },
      [&](int n, int* found, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, pl.wd.get(), pl.yd.get(), pl.data_cd.get(),
                                                           pl.xd.get(), n, found, perf);
      },
      [&](cudnnConvolutionBwdDataAlgo_t a, size_t* bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(h, pl.wd.get(), pl.yd.get(), pl.data_cd.get(),
                                                            pl.xd.get(), a, bytes);
      },
      "backward-data");
}

void choose_filter(TrainContext& c, ConvPlan& pl, const Tensor& x, const Tensor& dy, const GradOut& dw) {
  cudnnHandle_t h = c.gpu.cudnn;
  SearchOutput out(c.gpu, dw.t, dw.mode == GradMode::overwrite);
  choose<cudnnConvolutionBwdFilterAlgoPerf_t>(
      pl.filter, c.gpu, pl, pl.filter_cd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
      [&](int n, int* found, cudnnConvolutionBwdFilterAlgoPerf_t* perf, void* ws, size_t bytes) {
        return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, pl.xd.get(), x.raw(), pl.yd.get(), dy.raw(),
                                                             pl.filter_cd.get(), pl.wd.get(), out.p, n, found, perf,
                                                             ws, bytes);
      },
      [&](int n, int* found, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, pl.xd.get(), pl.yd.get(), pl.filter_cd.get(),
                                                             pl.wd.get(), n, found, perf);
      },
      [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, pl.xd.get(), pl.yd.get(), pl.filter_cd.get(),
                                                              pl.wd.get(), a, bytes);
      },
      "backward-filter");
}

// Input channels as cuDNN sees them: a 16-bit channels-last convolution
// whose C is not a multiple of 8 (an RGB input's 3) has none of the tensor
// cores' implicit-GEMM kernels, and the generic one cuDNN falls back to took
// 3 ms for ResNet-18's first layer at batch 256 on an H200: x and w are
// padded with zero channels to the next multiple of 8 instead (the padding
// adds zeros to every sum; its gradients are dropped).
int64_t conv_channels(const Conv2dParams& p, const Tensor& x) {
  const int64_t ch = x.dim(1);
  if (x.layout() != Layout::nhwc || !is_16bit_float(p.compute) || p.groups != 1 || ch % 8 == 0)
    return ch;
  return (ch + 7) / 8 * 8;
}

Shape with_dim1(Shape s, int64_t v) {
  s[1] = v;
  return s;
}

// The plan of x's shape (its channels `channels`) and w's in the compute precision.
ConvPlan& plan_for(TrainContext& c, const char* op, const Conv2dParams& p, const Tensor& x,
                   const Shape& w_in, int64_t channels) {
  const bool padded = channels != x.dim(1);  // groups == 1 then: w's C is x's
  const Shape xs = with_dim1(x.shape(), channels), w = padded ? with_dim1(w_in, channels) : w_in;
  Shape y = conv2d_output_shape(p, xs, w);
  std::string key =
      cache_key("conv2d", xs, p.compute, int(x.layout()), w, p.groups, p.stride[0], p.stride[1],
                p.padding[0], p.padding[1], p.dilation[0], p.dilation[1]);
  return c.plans.get<ConvPlan>(key, [&] {
    return std::make_unique<ConvPlan>(p, p.compute, x.layout(), xs, w, y, op_context(op, x));
  });
}

// An operand in the compute precision and the plan's layout (for w, nhwc is
// cuDNN's KRSC filter order): t itself when it has both, else a converted copy.
// With `channels` along axis 1 (conv_channels: x's and, groups 1, w's C
// padded; -1 for none): zero channels appended.
Tensor operand(TrainContext& c, const Tensor& t, DType compute, Layout layout,
               const ErrorContext& where, int64_t channels = -1) {
  Tensor r = t.dtype() == compute && t.layout() == layout
                 ? t
                 : converted_copy(c, t, compute, layout, where);
  return channels < 0 || channels == t.dim(1) ? r : with_channels(c, r, channels, where);
}

// Where cuDNN writes a result of `out`'s shape: `out` itself when it has the
// compute dtype and the plan's layout, else a scratch tensor widen() then
// converts into `out`.
// With `channels` along axis 1, the padded ones are dropped by widen().
struct Result {
  Result(TrainContext& c, const Tensor& out, bool accumulate, DType compute, Layout layout,
         int64_t channels = -1)
      : out(out),
        accumulate(accumulate),
        t(out.dtype() == compute && out.layout() == layout &&
                  (channels < 0 || channels == out.dim(1))
              ? out
              : device_empty(c.gpu, compute,
                             channels < 0 ? out.shape() : with_dim1(out.shape(), channels))
                    .with_layout(layout)) {}
  bool direct() const { return t.raw() == out.raw(); }
  // cuDNN's blend: only a direct result accumulates in place.
  float beta() const { return direct() && accumulate ? 1.f : 0.f; }
  GradOut as_grad() const { return {t, direct() && accumulate ? GradMode::accumulate : GradMode::overwrite}; }
  void widen(TrainContext& c, const ErrorContext& where) const {
    if (direct()) return;
    convert_into(c, t.dim(1) == out.dim(1) ? t : with_channels(c, t, out.dim(1), where), out,
                 accumulate, where);
  }
  Tensor out;
  bool accumulate;
  Tensor t;
};

void check_inputs(const TrainContext& c, const char* op, const Conv2dParams& p, const Tensor& x, const Tensor& w,
                  const Tensor& b) {
  require_activations(c, op, {&x});
  TANDEM_CHECK(x.rank() == 4, "conv2d wants x [N, C, H, W]", op_context(op, x));
  require_f32(c, op, {&w, &b});
  TANDEM_CHECK_SUPPORTED(
      p.compute == DType::f32 || p.compute == DType::f16 || p.compute == DType::bf16,
      "conv2d on cuda computes in f32, f16 or bf16, not " + std::string(dtype_name(p.compute)),
      op_context(op, x));
  conv2d_output_shape(p, x.shape(), w.shape());
  if (b.defined()) require_shape(op, b, {w.dim(0)}, "the bias");
}

}  // namespace

void conv2d_forward(void* ctx, const Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor& b,
                    const Tensor& y) {
  const char* op = "conv2d_forward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, p, x, w, b);
  require_activations(c, op, {&y});
  require_on_gpu(c, op, {&y}, y.dtype(), x.layout());
  require_shape(op, y, conv2d_output_shape(p, x.shape(), w.shape()), "y");
  if (y.numel() == 0) return;
  ErrorContext where = op_context(op, x);
  const Layout l = x.layout();
  const int64_t ch = conv_channels(p, x), pad = ch != x.dim(1) ? ch : -1;
  Tensor xc = operand(c, x, p.compute, l, where, pad), wc = operand(c, w, p.compute, l, where, pad);
  Result yc(c, y, false, p.compute, l);
  ConvPlan& plan = plan_for(c, op, p, x, w.shape(), ch);
  std::lock_guard<std::mutex> lock(plan.mu);
  if (!plan.fwd.chosen) choose_forward(c, plan, xc, wc, yc.t);
  Scratch ws(c.gpu, plan.fwd.workspace);
  const float one = 1.f, zero = 0.f;
  check_cudnn(cudnnConvolutionForward(c.gpu.cudnn, &one, plan.xd.get(), xc.raw(), plan.wd.get(), wc.raw(),
                                      plan.fwd_cd.get(), cudnnConvolutionFwdAlgo_t(plan.fwd.algo), ws.get(),
                                      ws.bytes(), &zero, plan.yd.get(), yc.t.raw()),
              "cudnnConvolutionForward", where);
  yc.widen(c, where);
  if (b.defined()) launch_add(c, y, b.reshaped({1, w.dim(0), 1, 1}), y, where);
}

void conv2d_backward(void* ctx, const Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor& dy,
                     const GradOut& dx, const GradOut& dw, const GradOut& db) {
  const char* op = "conv2d_backward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, p, x, w, Tensor());
  require_activations(c, op, {&dy});
  require_on_gpu(c, op, {&dy}, dy.dtype(), x.layout());
  require_shape(op, dy, conv2d_output_shape(p, x.shape(), w.shape()), "dy");
  GradPtr gx = grad_ptr(c, op, dx, x.shape(), x.dtype(), x.layout()),
          gw = grad_ptr(c, op, dw, w.shape()), gb = grad_ptr(c, op, db, {w.dim(0)});
  ErrorContext where = op_context(op, x);
  if (gb) launch_sum_to(c, dy, gb.p, DType::f32, {1, w.dim(0), 1, 1}, gb.accumulate, where);
  if ((!gx && !gw) || dy.numel() == 0) return;
  const int64_t ch = conv_channels(p, x), pad = ch != x.dim(1) ? ch : -1;
  ConvPlan& plan = plan_for(c, op, p, x, w.shape(), ch);
  std::lock_guard<std::mutex> lock(plan.mu);
  const float one = 1.f;
  const Layout l = x.layout();
  Tensor dyc = operand(c, dy, p.compute, l, where);
  if (gx) {
    Tensor wc = operand(c, w, p.compute, l, where, pad);
    Result r(c, dx.t, gx.accumulate, p.compute, l, pad);
    if (!plan.data.chosen) choose_data(c, plan, wc, dyc, r.as_grad());
    Scratch ws(c.gpu, plan.data.workspace);
    float beta = r.beta();
    check_cudnn(cudnnConvolutionBackwardData(c.gpu.cudnn, &one, plan.wd.get(), wc.raw(), plan.yd.get(), dyc.raw(),
                                             plan.data_cd.get(), cudnnConvolutionBwdDataAlgo_t(plan.data.algo),
                                             ws.get(), ws.bytes(), &beta, plan.xd.get(), r.t.raw()),
                "cudnnConvolutionBackwardData", where);
    r.widen(c, where);
  }
  if (gw) {
    Tensor xc = operand(c, x, p.compute, l, where, pad);
    Result r(c, dw.t, gw.accumulate, p.compute, l, pad);
    if (!plan.filter.chosen) choose_filter(c, plan, xc, dyc, r.as_grad());
    Scratch ws(c.gpu, plan.filter.workspace);
    float beta = r.beta();
    check_cudnn(cudnnConvolutionBackwardFilter(c.gpu.cudnn, &one, plan.xd.get(), xc.raw(), plan.yd.get(), dyc.raw(),
                                               plan.filter_cd.get(), cudnnConvolutionBwdFilterAlgo_t(plan.filter.algo),
                                               ws.get(), ws.bytes(), &beta, plan.wd.get(), r.t.raw()),
                "cudnnConvolutionBackwardFilter", where);
    r.widen(c, where);
  }
}

}  // namespace tandem::cuda::train
