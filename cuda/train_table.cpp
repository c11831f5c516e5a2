// The CUDA training table of each GPU: its context and the entries, each in
// its op's file beside the op's inference kernels (cuda/eltwise.cu,
// cuda/conv_train.cpp beside cuda/conv.cpp, ...).
#include <map>
#include <memory>
#include <mutex>

#include "cuda/cupti_source.h"
#include "cuda/train_context.h"
#include "cuda/train_table.h"

namespace tandem::cuda {

namespace {

Tensor empty(void* ctx, DType dtype, const Shape& shape) {
  return train::device_empty(train::enter(ctx).gpu, dtype, shape);
}

struct DeviceTable {
  explicit DeviceTable(Context& gpu) : context(gpu) {
    table = TrainBackend{
        .name = "cuda",
        .ctx = &context,
        .keeps_16bit_activations = true,
        .takes_nhwc_activations = true,
        .empty = empty,
        .fill = train::fill,
        .cast = train::cast,
        .conv2d_forward = train::conv2d_forward,
        .conv2d_backward = train::conv2d_backward,
        .linear_forward = train::linear_forward,
        .linear_backward = train::linear_backward,
        .batch_norm_forward = train::batch_norm_forward,
        .batch_norm_backward = train::batch_norm_backward,
        .batch_norm_relu_forward = train::batch_norm_relu_forward,
        .batch_norm_relu_backward = train::batch_norm_relu_backward,
        .layer_norm_forward = train::layer_norm_forward,
        .layer_norm_backward = train::layer_norm_backward,
        .eltwise_forward = train::eltwise_forward,
        .eltwise_backward = train::eltwise_backward,
        .pool2d_forward = train::pool2d_forward,
        .pool2d_backward = train::pool2d_backward,
        .add_forward = train::add_forward,
        .sum_to = train::sum_to,
        .concat_forward = train::concat_forward,
        .concat_backward = train::concat_backward,
        .dropout_forward = train::dropout_forward,
        .dropout_backward = train::dropout_backward,
        .cross_entropy_forward = train::cross_entropy_forward,
        .cross_entropy_backward = train::cross_entropy_backward,
        .fake_quant_forward = train::fake_quant_forward,
        .fake_quant_backward = train::fake_quant_backward,
        .min_max = train::min_max,
    };
  }
  train::TrainContext context;
  TrainBackend table{};
};

}  // namespace

const TrainBackend& cuda_train_backend(int device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<DeviceTable>> tables;
  std::lock_guard<std::mutex> lock(mutex);
  auto& t = tables[device];
  if (!t) {
    Context& gpu = context(device);  // Error when the GPU is absent
    enable_gpu_profiling();
    // Training allocates every activation and gradient from the pool: keep
    // freed blocks there for the next step.
    keep_pool_memory(device);
    t = std::make_unique<DeviceTable>(gpu);
  }
  return t->table;
}

}  // namespace tandem::cuda
