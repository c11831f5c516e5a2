#pragma once
// The one cuDNN convolution plan of tandem, shared by the inference kernel's
// forward (cuda/conv.cpp) and training's three directions
// (cuda/conv_train.cpp): the descriptors of one problem, the math policy,
// each direction's timing search, the rule that picks an algorithm from
// cuDNN's timings, the on-disk cache of the picks (cuda/algo_cache.h) and the
// validation of a cached pick, the workspace bound, and the channel padding
// tensor cores want.
//
// Math policy: fp32 runs with CUDNN_FMA_MATH (no TF32) and without the FFT
// and Winograd algorithms, whose transforms round differently from a direct
// sum: fp32 is the path that must match the CPU. f16 and bf16 accumulate in
// f32 and may use tensor cores and every algorithm.
// Pick: among cuDNN's usable results, the fastest; among those within 3% of
// it, the one with the smallest workspace (scratch is part of a plan's peak
// memory).
#include <cudnn.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/layout.h"
#include "core/tensor.h"
#include "cuda/algo_cache.h"
#include "cuda/context.h"
#include "cuda/cudnn_utils.h"
#include "cuda/float_types.h"
#include "profile/zone.h"

namespace tandem::cuda {

// Largest workspace an algorithm may ask for.
constexpr size_t kMaxConvWorkspace = size_t(256) << 20;

// The math type a convolution of `dtype` asks cuDNN for.
cudnnMathType_t conv_math_type(DType dtype);

// Input channels as cuDNN should see them: a 16-bit convolution (groups 1)
// whose C is not a multiple of 8 (an RGB input's 3) has none of the tensor
// cores' implicit-GEMM kernels, and the generic ones cuDNN falls back to ran
// 10x slower than the same layer with C = 8 (3 ms for ResNet-18's first
// layer at batch 256 on an H200): x and w are padded with zero channels to
// the next multiple of 8 instead (the padding adds zeros to every sum).
int64_t tensor_core_channels(DType dtype, int64_t groups, int64_t channels);

// Filter [M, C/g, R, S] -> [M, R, S, cout] with cout >= C/g (zeros beyond
// C/g), the KRSC order of channels-last convolutions; any element size.
std::vector<char> to_krsc(const Tensor& w, int64_t cout);

// x, y: NCHW or NHWC activations ([N, C, H, W] either way); w: the filter
// [M, C/groups, R, S], in KCRS order for NCHW, KRSC for NHWC.
struct ConvTensors {
  ConvTensors(DType dtype, Layout layout, const int64_t x[4], const int64_t w[4], const int64_t y[4],
              const ErrorContext& where);
  TensorDescriptor x, y;
  FilterDescriptor w;
  DType dtype;
  Layout layout;
};

// The convolution itself (symmetric pads) with the policy's math type; one
// per direction, as each keeps the math type of its chosen algorithm.
// Checks that cuDNN's output shape is `t`'s y.
void set_conv(const ConvolutionDescriptor& cd, const ConvTensors& t, const int64_t pad[2], const int64_t stride[2],
              const int64_t dilation[2], int64_t groups, const ErrorContext& where);

// The problem as the descriptors give it to cuDNN (so the key follows
// whatever packing or padding the caller chose), for the algorithm cache.
ConvProblem conv_problem(const ConvTensors& t, const ConvolutionDescriptor& cd, const char* direction,
                         const ErrorContext& where);

AlgoDevice algo_device(const Context& c);

// The largest workspace up to kMaxConvWorkspace the pool can lend for a search.
std::unique_ptr<Scratch> search_workspace(Context& c);

// An algorithm as chosen: its cudnnConvolution*Algo_t, the workspace it
// needs, and whether it came from the cache (with the fused flag the cache
// kept).
struct ConvAlgo {
  int algo = 0;
  size_t workspace = 0;
  bool cached = false;
  bool cached_fused = false;
};

// One direction's cuDNN calls: its timing search (on buffers the caller
// owns), its heuristics (when the search fails) and its workspace size.
template <typename Perf>
struct ConvSearch {
  using Algo = decltype(Perf::algo);
  int count = 0;  // CUDNN_CONVOLUTION_*_ALGO_COUNT
  std::function<cudnnStatus_t(int, int*, Perf*, void*, size_t)> find;
  std::function<cudnnStatus_t(int, int*, Perf*)> rank;
  std::function<cudnnStatus_t(Algo, size_t*)> size_of;
};

// The buffers a timing search runs on, asked for only when it runs (a
// cached choice needs none): forward x, w -> y; backward-data w, dy -> dx;
// backward-filter x, dy -> dw. The output is overwritten.
struct ConvOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
};
using ConvOperandSource = std::function<ConvOperands()>;

// Each direction's cuDNN calls on the plan's descriptors (t and cd must
// outlive the search).
ConvSearch<cudnnConvolutionFwdAlgoPerf_t> forward_search(cudnnHandle_t h, const ConvTensors& t,
                                                         const ConvolutionDescriptor& cd, ConvOperandSource operands);
ConvSearch<cudnnConvolutionBwdDataAlgoPerf_t> backward_data_search(cudnnHandle_t h, const ConvTensors& t,
                                                                   const ConvolutionDescriptor& cd,
                                                                   ConvOperandSource operands);
ConvSearch<cudnnConvolutionBwdFilterAlgoPerf_t> backward_filter_search(cudnnHandle_t h, const ConvTensors& t,
                                                                       const ConvolutionDescriptor& cd,
                                                                       ConvOperandSource operands);

namespace conv_detail {

bool transform(cudnnConvolutionFwdAlgo_t a);
bool transform(cudnnConvolutionBwdDataAlgo_t a);
bool transform(cudnnConvolutionBwdFilterAlgo_t a);

template <typename Perf>
bool allowed(const Perf& p, DType dtype) {
  if (is_16bit_float(dtype)) return true;
  return !transform(p.algo) && p.mathType != CUDNN_TENSOR_OP_MATH &&
         p.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// A cached choice, if cuDNN still sizes its workspace here (the entry may
// come from a damaged or hand-edited file) and the policy allows it. Sets
// its math type on cd, or leaves cd's as it was when it refuses.
template <typename Perf>
std::optional<ConvAlgo> use_cached(const ConvChoice& hit, DType dtype, const ConvolutionDescriptor& cd,
                                   const ConvSearch<Perf>& s, const ErrorContext& where) {
  if (hit.algo < 0 || hit.algo >= s.count || hit.workspace_bytes > kMaxConvWorkspace) return std::nullopt;
  Perf p{};
  p.algo = decltype(p.algo)(hit.algo);
  p.mathType = cudnnMathType_t(hit.math_type);
  if (!allowed(p, dtype)) return std::nullopt;
  cudnnMathType_t asked;
  check_cudnn(cudnnGetConvolutionMathType(cd.get(), &asked), "cudnnGetConvolutionMathType", where);
  size_t bytes = 0;
  // fp32 keeps FMA math: a result's default math would permit TF32.
  const cudnnMathType_t math = is_16bit_float(dtype) ? p.mathType : asked;
  if (cudnnSetConvolutionMathType(cd.get(), math) != CUDNN_STATUS_SUCCESS ||
      s.size_of(p.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > kMaxConvWorkspace) {
    check_cudnn(cudnnSetConvolutionMathType(cd.get(), asked), "cudnnSetConvolutionMathType", where);
    return std::nullopt;
  }
  return ConvAlgo{hit.algo, align_up(std::max(bytes, hit.workspace_bytes)), true, hit.fused};
}

// The policy's pick among `found` results; null when none is usable.
template <typename Perf>
const Perf* pick(const std::vector<Perf>& perf, int found, DType dtype) {
  const Perf* best = nullptr;
  for (int i = 0; i < found && i < int(perf.size()); ++i) {
    const Perf& p = perf[size_t(i)];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > kMaxConvWorkspace || !allowed(p, dtype)) continue;
    if (!best) best = &p;
    else if (p.time <= best->time * 1.03f && p.memory < best->memory) best = &p;
  }
  return best;
}

}  // namespace conv_detail

// Chooses one direction's algorithm for `problem`: the cache's entry when
// the policy and cuDNN accept it, else the pick of cuDNN's timings (its
// heuristics' ranking when the search fails). The algorithm's math type goes
// on cd. A measured choice is not stored: the caller stores it, once it
// knows all it keeps (inference's fused flag).
template <typename Perf>
ConvAlgo choose_conv_algo(Context& gpu, const ConvProblem& problem, DType dtype, const ConvolutionDescriptor& cd,
                          const ConvSearch<Perf>& s, const ErrorContext& where) {
  if (AlgoCache* cache = algo_cache(algo_device(gpu)))
    if (std::optional<ConvChoice> hit = cache->find(problem))
      if (std::optional<ConvAlgo> a = conv_detail::use_cached(*hit, dtype, cd, s, where)) return *a;
  std::vector<Perf> perf(size_t(s.count));
  int found = 0;
  {
    TANDEM_ZONE_CAT("cudnn algorithm search", "cuda");
    std::unique_ptr<Scratch> ws = search_workspace(gpu);
    if (s.find(s.count, &found, perf.data(), ws->get(), ws->bytes()) != CUDNN_STATUS_SUCCESS) {
      cudaGetLastError();  // the search's failure is handled here, not at a later launch check
      check_cudnn(s.rank(s.count, &found, perf.data()), "cuDNN's convolution heuristics", where);
    }
  }
  const Perf* best = conv_detail::pick(perf, found, dtype);
  TANDEM_CHECK_SUPPORTED(best != nullptr, "cuDNN has no usable " + problem.direction + " convolution algorithm",
                         where);
  if (is_16bit_float(dtype))  // fp32 keeps FMA math: a result's default math would permit TF32
    check_cudnn(cudnnSetConvolutionMathType(cd.get(), best->mathType), "cudnnSetConvolutionMathType", where);
  size_t bytes = 0;
  check_cudnn(s.size_of(best->algo, &bytes), "cudnnGetConvolution*WorkspaceSize", where);
  return ConvAlgo{int(best->algo), align_up(std::max(bytes, best->memory)), false, false};
}

// Stores a measured choice (cached ones are there already).
void remember_conv_algo(Context& gpu, const ConvProblem& problem, const ConvolutionDescriptor& cd, const ConvAlgo& a,
                        bool fused, const ErrorContext& where);

}  // namespace tandem::cuda
