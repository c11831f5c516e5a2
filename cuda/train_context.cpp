#include "cuda/train_context.h"

#include "profile/zone.h"

namespace tandem::cuda::train {

TrainContext& enter(void* ctx) {
  auto& c = *static_cast<TrainContext*>(ctx);
  set_device(c.gpu.device);
  return c;
}

void require_on_gpu(const TrainContext& c, const char* op,
                    std::initializer_list<const Tensor*> tensors, DType want, Layout layout) {
  Device here = Device::cuda(c.gpu.device);
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    TANDEM_CHECK(t->device() == here,
                 "the " + here.str() + " training kernels got a tensor on " + t->device().str(),
                 op_context(op, *t));
    TANDEM_CHECK_SUPPORTED(t->dtype() == want && t->layout() == layout,
                           "the CUDA training kernels take " + std::string(dtype_name(want)) +
                               " tensors in layout " + std::string(layout_name(layout)) +
                               " here, got " + t->desc().str(),
                           op_context(op, *t));
  }
}

namespace {

// The first defined tensor of the list, or null.
const Tensor* first_defined(std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    if (t->defined()) return t;
  return nullptr;
}

}  // namespace

ActivationDesc require_activations(const TrainContext& c, const char* op,
                                   std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = first_defined(tensors);
  if (!first) return {};
  const DType d = first->dtype();
  const Layout l = first->layout();
  TANDEM_CHECK_SUPPORTED(
      (d == DType::f32 || d == DType::f16 || d == DType::bf16) &&
          (l == Layout::plain || (l == Layout::nhwc && first->rank() == 4)),
      "the CUDA training kernels take f32, f16 or bf16 activations, plain or 4-D nhwc, got " +
          first->desc().str(),
      op_context(op, *first));
  require_on_gpu(c, op, tensors, d, l);
  return {d, l};
}

GradPtr grad_ptr(const TrainContext& c, const char* op, const GradOut& g, const Shape& shape,
                 DType dtype, Layout layout) {
  if (!g.wanted()) return {};
  require_on_gpu(c, op, {&g.t}, dtype, layout);
  require_shape(op, g.t, shape, "the gradient");
  return {g.t.raw(), g.mode == GradMode::accumulate};
}

namespace {

void free_on_stream(void* p, void* ctx) { device_free(*static_cast<Context*>(ctx), p); }

}  // namespace

Tensor device_empty(Context& c, DType dtype, const Shape& shape) {
  TensorDesc d{dtype, shape, Layout::plain};
  void* p = device_alloc(c, d.bytes());
  std::shared_ptr<Storage> storage;
  try {
    storage = std::make_shared<Storage>(p, d.bytes(), Device::cuda(c.device), free_on_stream, &c);
  } catch (...) {
    device_free(c, p);
    throw;
  }
  return Tensor(d, std::move(storage));
}

void read_back(Context& c, void* host, const void* device, size_t bytes, const ErrorContext& where) {
  // The wait for everything queued before it (a step's whole backward, when
  // the gradient norm is read): the profile must see it as GPU wait.
  TANDEM_ZONE_CAT("read back (waits for the GPU)", "wait.gpu");
  check_cuda(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, c.stream), "cudaMemcpyAsync(D2H)", where);
  check_cuda(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize", where);
}

}  // namespace tandem::cuda::train
