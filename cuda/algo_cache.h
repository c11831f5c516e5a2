#pragma once
// Convolution algorithm choices remembered on disk: cuDNN's timing search is
// most of a large plan's compile time (ResNet-50 at batch 256: ~10 s on an
// H200), and its answer only depends on the GPU model, the cuDNN version and
// the problem. One JSON file per GPU model and cuDNN version, in tandem's
// cache directory (core/cache_dir.h: $TANDEM_CACHE_DIR, else
// $XDG_CACHE_HOME/tandem, else ~/.cache/tandem);
// TANDEM_ALGO_CACHE=0 turns it off.
//
// The cache only ever saves time: a missing, corrupt or unwritable file is
// reported once on stderr and the algorithm is measured as without it. The
// file is replaced by rename, so concurrent processes never see it torn (the
// last writer wins; each writer merges what is on disk first).
//
// Plain C++ (no CUDA headers), so keys and the store are tested without a GPU;
// cuda/conv.cpp fills the structs from its cuDNN descriptors.
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace tandem::cuda {

// The GPU model and library a measurement holds for.
struct AlgoDevice {
  std::string gpu;  // cudaDeviceProp::name
  int cc_major = 0, cc_minor = 0;
  size_t cudnn_version = 0;  // cudnnGetVersion()

  std::string str() const;        // "NVIDIA H200 sm_90 cudnn 91900"
  std::string file_name() const;  // "conv_algos-v2-NVIDIA_H200-sm90-cudnn91900.json"
};

// One convolution as cuDNN is asked to run it.
struct ConvProblem {
  std::string dtype;                       // of X, W and Y ("f32", "f16", ...)
  std::string layout;                      // of X and Y ("nhwc")
  int64_t n = 0, c = 0, h = 0, w = 0;      // X as cuDNN sees it (after any packing or padding)
  int64_t k = 0, r = 0, s = 0;             // output channels, kernel extents
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  int compute_type = 0;                    // cudnnDataType_t of the accumulation
  int math_type = 0;                       // cudnnMathType_t asked for
  // The epilogue cudnnConvolutionBiasActivationForward would be tried with
  // ("" when the fused call is not tried), e.g. "bias+relu+residual".
  std::string fused;
  // Which of cuDNN's three convolutions: "forward" (inference and training),
  // "backward-data" or "backward-filter" (training); `algo` below is that
  // direction's cudnnConvolution*Algo_t.
  std::string direction = "forward";

  std::string key() const;
};

// What the measurement chose.
struct ConvChoice {
  int algo = 0;                // cudnnConvolutionFwdAlgo_t (or the direction's)
  int math_type = 0;           // cudnnMathType_t the algorithm runs with
  size_t workspace_bytes = 0;
  bool fused = false;          // the fused call accepted the problem
  bool operator==(const ConvChoice&) const = default;
};

// The choices of one file. Thread-safe; the file is read at the first
// lookup and rewritten at each store.
class AlgoCache {
 public:
  AlgoCache(std::string path, AlgoDevice device);

  std::optional<ConvChoice> find(const ConvProblem& p);
  void store(const ConvProblem& p, const ConvChoice& choice);

  const std::string& path() const { return path_; }
  // The key a problem is stored under: the device and the problem.
  std::string key(const ConvProblem& p) const;

 private:
  void load_locked();
  void write_locked();
  void warn_once(const std::string& what);

  std::string path_;
  AlgoDevice device_;
  std::mutex mutex_;
  bool loaded_ = false, warned_ = false;
  std::map<std::string, ConvChoice> entries_;
};

// The process's cache for `device`, shared by all kernels; nullptr when
// TANDEM_ALGO_CACHE=0 or there is no cache directory.
AlgoCache* algo_cache(const AlgoDevice& device);

}  // namespace tandem::cuda
