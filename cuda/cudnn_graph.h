#pragma once
// cuDNN's graph (backend) API, for what the legacy API cannot say: a
// convolution on 8-bit integers or 8-bit floats whose epilogue scales each
// output channel, adds a bias and a residual, applies the activation and
// converts back to 8 bits, all in the convolution's kernel. The legacy
// cudnnConvolutionBiasActivationForward takes one scale for the whole tensor
// and no fp8 at all.
//
// The graph is built from cuDNN's own descriptors: tensors named by a
// unique id, a convolution and pointwise operations joined through virtual
// (never stored) tensors. cuDNN's heuristics then offer engine
// configurations; each becomes an execution plan, which runs on a variant
// pack that maps the ids to device pointers.
#include <cudnn.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace tandem::cuda::cudnn_graph {

// One cudnnBackendDescriptor_t, destroyed with its owner.
class Descriptor {
 public:
  Descriptor() = default;
  Descriptor(cudnnBackendDescriptorType_t type, const ErrorContext& where);
  ~Descriptor();
  Descriptor(Descriptor&& o) noexcept
      : d_(std::exchange(o.d_, nullptr)), where_(std::move(o.where_)) {}
  Descriptor& operator=(Descriptor&& o) noexcept;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
           const void* values);
  void set(cudnnBackendAttributeName_t name, int64_t value) {
    set(name, CUDNN_TYPE_INT64, 1, &value);
  }
  void set(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values) {
    set(name, CUDNN_TYPE_INT64, int64_t(values.size()), values.data());
  }
  void set(cudnnBackendAttributeName_t name, const Descriptor& d) {
    cudnnBackendDescriptor_t raw = d.get();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
  }
  void set_type(cudnnBackendAttributeName_t name, cudnnDataType_t t) {
    set(name, CUDNN_TYPE_DATA_TYPE, 1, &t);
  }
  void finalize();

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
  ErrorContext where_;
};

// A tensor of the graph. Dimensions and strides in cuDNN's order (N, C,
// spatial...); channels-last data has C's stride 1. A virtual tensor joins
// two operations and is never in memory.
struct TensorSpec {
  int64_t uid = 0;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  std::vector<int64_t> dims, strides;
  bool is_virtual = false;
};

// Channels-last strides of `dims` (N, C, spatial...).
std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& dims);

struct ConvSpec {
  std::vector<int64_t> pads_begin, pads_end, strides, dilations;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
};

// One execution plan of a finalized graph: an engine configuration cuDNN
// accepted for it, and the workspace it needs.
struct Plan {
  Descriptor plan;
  int64_t workspace = 0;
  std::string engine;  // cuDNN's name for the engine and its knobs (plan JSON's tag)
};

class OpGraph {
 public:
  OpGraph(cudnnHandle_t h, ErrorContext where) : h_(h), where_(std::move(where)) {}

  // Adds a tensor; returns its uid.
  int64_t tensor(const TensorSpec& t);
  // y = conv(x, w), all three already added.
  void conv_forward(int64_t x, int64_t w, int64_t y, const ConvSpec& c);
  // y = mode(x[, b]); b < 0: a unary mode (RELU_FWD, IDENTITY, ...).
  void pointwise(cudnnPointwiseMode_t mode, int64_t x, int64_t b, int64_t y);
  // Finishes the graph; throws Error::unsupported when cuDNN refuses it.
  void finalize();

  // Up to `limit` plans, cuDNN's heuristics' order (mode A, then its
  // fallback list), each built; an engine that fails to build is skipped.
  // Empty when no engine runs this graph on this GPU.
  std::vector<Plan> plans(size_t limit) const;

  cudnnHandle_t handle() const { return h_; }

 private:
  const Descriptor& find(int64_t uid) const;
  std::vector<Plan> plans_of(cudnnBackendHeurMode_t mode, size_t limit) const;

  cudnnHandle_t h_;
  ErrorContext where_;
  std::vector<std::pair<int64_t, Descriptor>> tensors_;
  std::vector<Descriptor> ops_, op_parts_;
  Descriptor graph_;
};

// Runs `plan` on the handle's stream: pointers[i] is the memory of uids[i].
void execute(cudnnHandle_t h, const Plan& plan, const std::vector<int64_t>& uids,
             const std::vector<void*>& pointers, void* workspace, const ErrorContext& where);

}  // namespace tandem::cuda::cudnn_graph
