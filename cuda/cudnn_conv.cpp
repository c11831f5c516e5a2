#include "cuda/cudnn_conv.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>

#include "core/shape.h"

namespace tandem::cuda {

namespace {

int to_int(int64_t v, const ErrorContext& where) {
  TANDEM_CHECK_SUPPORTED(v >= 0 && v <= INT_MAX, "a convolution extent over 2^31", where);
  return int(v);
}

// A direction's search from its three cuDNN calls, which all take their
// descriptors in one order: the two operands', the convolution's, the output's.
template <typename Perf, typename D0, typename D1, typename D2, typename Find, typename Rank, typename SizeOf>
ConvSearch<Perf> search_of(int count, cudnnHandle_t h, D0 d0, D1 d1, cudnnConvolutionDescriptor_t c, D2 d2,
                           ConvOperandSource operands, Find find, Rank rank, SizeOf size_of) {
  return {count,
          [=](int n, int* found, Perf* perf, void* ws, size_t bytes) {
            const ConvOperands o = operands();
            return find(h, d0, o.a, d1, o.b, c, d2, o.out, n, found, perf, ws, bytes);
          },
          [=](int n, int* found, Perf* perf) { return rank(h, d0, d1, c, d2, n, found, perf); },
          [=](decltype(Perf::algo) a, size_t* bytes) { return size_of(h, d0, d1, c, d2, a, bytes); }};
}

}  // namespace

std::vector<char> to_krsc(const Tensor& w, int64_t cout) {
  const Shape& s = w.shape();
  const int64_t m = s[0], cg = s[1], r = s[2], q = s[3];
  const size_t es = dtype_size(w.dtype());
  const char* src = static_cast<const char*>(w.raw());
  std::vector<char> out(size_t(m * r * q * cout) * es, 0);
  for (int64_t k = 0; k < m; ++k)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t y = 0; y < r; ++y)
        for (int64_t x = 0; x < q; ++x)
          std::memcpy(&out[size_t(((k * r + y) * q + x) * cout + c) * es],
                      &src[size_t(((k * cg + c) * r + y) * q + x) * es], es);
  return out;
}

int64_t tensor_core_channels(DType dtype, int64_t groups, int64_t channels) {
  if (!is_16bit_float(dtype) || groups != 1 || channels % 8 == 0) return channels;
  return (channels + 7) / 8 * 8;
}

cudnnMathType_t conv_math_type(DType dtype) { return is_16bit_float(dtype) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH; }

ConvTensors::ConvTensors(DType dtype, Layout layout, const int64_t xs[4], const int64_t ws[4], const int64_t ys[4],
                         const ErrorContext& where)
    : x(where), y(where), w(where), dtype(dtype), layout(layout) {
  const cudnnDataType_t t = cudnn_dtype(dtype, "conv", where);
  // nhwc: x, y and the filter (KRSC) channels last, tensor cores' own order.
  const cudnnTensorFormat_t f = layout == Layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  for (auto [d, s] : {std::pair{&x, xs}, std::pair{&y, ys}})
    check_cudnn(cudnnSetTensor4dDescriptor(d->get(), f, t, to_int(s[0], where), to_int(s[1], where),
                                           to_int(s[2], where), to_int(s[3], where)),
                "cudnnSetTensor4dDescriptor", where);
  check_cudnn(cudnnSetFilter4dDescriptor(w.get(), t, f, to_int(ws[0], where), to_int(ws[1], where),
                                         to_int(ws[2], where), to_int(ws[3], where)),
              "cudnnSetFilter4dDescriptor", where);
}

void set_conv(const ConvolutionDescriptor& cd, const ConvTensors& t, const int64_t pad[2], const int64_t stride[2],
              const int64_t dilation[2], int64_t groups, const ErrorContext& where) {
  check_cudnn(cudnnSetConvolution2dDescriptor(cd.get(), to_int(pad[0], where), to_int(pad[1], where),
                                              to_int(stride[0], where), to_int(stride[1], where),
                                              to_int(dilation[0], where), to_int(dilation[1], where),
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              "cudnnSetConvolution2dDescriptor", where);
  check_cudnn(cudnnSetConvolutionGroupCount(cd.get(), to_int(groups, where)), "cudnnSetConvolutionGroupCount", where);
  check_cudnn(cudnnSetConvolutionMathType(cd.get(), conv_math_type(t.dtype)), "cudnnSetConvolutionMathType", where);
  int out[4] = {}, y[4] = {}, stride_y[4];
  cudnnDataType_t dt;
  check_cudnn(cudnnGetConvolutionNdForwardOutputDim(cd.get(), t.x.get(), t.w.get(), 4, out),
              "cudnnGetConvolutionNdForwardOutputDim", where);
  check_cudnn(cudnnGetTensor4dDescriptor(t.y.get(), &dt, &y[0], &y[1], &y[2], &y[3], &stride_y[0], &stride_y[1],
                                         &stride_y[2], &stride_y[3]),
              "cudnnGetTensor4dDescriptor", where);
  TANDEM_CHECK(std::equal(out, out + 4, y),
               "cuDNN's convolution output " + shape_str({out[0], out[1], out[2], out[3]}) + " differs from " +
                   shape_str({y[0], y[1], y[2], y[3]}),
               where);
}

ConvProblem conv_problem(const ConvTensors& t, const ConvolutionDescriptor& cd, const char* direction,
                         const ErrorContext& where) {
  ConvProblem p;
  p.dtype = dtype_name(t.dtype);
  p.layout = t.layout == Layout::nhwc ? "nhwc" : "nchw";
  p.direction = direction;
  cudnnDataType_t dt;
  int n, c, h, w, ns, cs, hs, ws;
  check_cudnn(cudnnGetTensor4dDescriptor(t.x.get(), &dt, &n, &c, &h, &w, &ns, &cs, &hs, &ws),
              "cudnnGetTensor4dDescriptor", where);
  p.n = n, p.c = c, p.h = h, p.w = w;
  cudnnTensorFormat_t format;
  int k, fc, r, s;
  check_cudnn(cudnnGetFilter4dDescriptor(t.w.get(), &dt, &format, &k, &fc, &r, &s), "cudnnGetFilter4dDescriptor",
              where);
  p.k = k, p.r = r, p.s = s;
  int ph, pw, sh, sw, dh, dw, groups;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute;
  check_cudnn(cudnnGetConvolution2dDescriptor(cd.get(), &ph, &pw, &sh, &sw, &dh, &dw, &mode, &compute),
              "cudnnGetConvolution2dDescriptor", where);
  check_cudnn(cudnnGetConvolutionGroupCount(cd.get(), &groups), "cudnnGetConvolutionGroupCount", where);
  p.pad_h = ph, p.pad_w = pw, p.stride_h = sh, p.stride_w = sw, p.dilation_h = dh, p.dilation_w = dw;
  p.groups = groups;
  p.compute_type = int(compute);
  cudnnMathType_t math;
  check_cudnn(cudnnGetConvolutionMathType(cd.get(), &math), "cudnnGetConvolutionMathType", where);
  p.math_type = int(math);
  return p;
}

AlgoDevice algo_device(const Context& c) { return {c.props.name, c.props.major, c.props.minor, cudnnGetVersion()}; }

std::unique_ptr<Scratch> search_workspace(Context& c) {
  for (size_t bytes = kMaxConvWorkspace; bytes >= (size_t(1) << 20); bytes /= 2) {
    try {
      return std::make_unique<Scratch>(c, bytes);
    } catch (const OutOfMemory&) {
    }
  }
  return std::make_unique<Scratch>(c, 0);
}

void remember_conv_algo(Context& gpu, const ConvProblem& problem, const ConvolutionDescriptor& cd, const ConvAlgo& a,
                        bool fused, const ErrorContext& where) {
  if (a.cached) return;
  AlgoCache* cache = algo_cache(algo_device(gpu));
  if (!cache) return;
  cudnnMathType_t math;
  check_cudnn(cudnnGetConvolutionMathType(cd.get(), &math), "cudnnGetConvolutionMathType", where);
  cache->store(problem, ConvChoice{a.algo, int(math), a.workspace, fused});
}

ConvSearch<cudnnConvolutionFwdAlgoPerf_t> forward_search(cudnnHandle_t h, const ConvTensors& t,
                                                         const ConvolutionDescriptor& cd, ConvOperandSource operands) {
  return search_of<cudnnConvolutionFwdAlgoPerf_t>(
      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, h, t.x.get(), t.w.get(), cd.get(), t.y.get(), std::move(operands),
      cudnnFindConvolutionForwardAlgorithmEx, cudnnGetConvolutionForwardAlgorithm_v7,
      cudnnGetConvolutionForwardWorkspaceSize);
}

ConvSearch<cudnnConvolutionBwdDataAlgoPerf_t> backward_data_search(cudnnHandle_t h, const ConvTensors& t,
                                                                   const ConvolutionDescriptor& cd,
                                                                   ConvOperandSource operands) {
  return search_of<cudnnConvolutionBwdDataAlgoPerf_t>(
      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, h, t.w.get(), t.y.get(), cd.get(), t.x.get(), std::move(operands),
      cudnnFindConvolutionBackwardDataAlgorithmEx, cudnnGetConvolutionBackwardDataAlgorithm_v7,
      cudnnGetConvolutionBackwardDataWorkspaceSize);
}

ConvSearch<cudnnConvolutionBwdFilterAlgoPerf_t> backward_filter_search(cudnnHandle_t h, const ConvTensors& t,
                                                                       const ConvolutionDescriptor& cd,
                                                                       ConvOperandSource operands) {
  return search_of<cudnnConvolutionBwdFilterAlgoPerf_t>(
      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, h, t.x.get(), t.y.get(), cd.get(), t.w.get(), std::move(operands),
      cudnnFindConvolutionBackwardFilterAlgorithmEx, cudnnGetConvolutionBackwardFilterAlgorithm_v7,
      cudnnGetConvolutionBackwardFilterWorkspaceSize);
}

namespace conv_detail {

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

}  // namespace conv_detail

}  // namespace tandem::cuda
