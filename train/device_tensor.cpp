#include "train/device_tensor.h"

#include <cstring>

#include "train/backend.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/transfer.h"
#endif

namespace tandem::train {

#ifndef TANDEM_HAVE_CUDA
namespace {

[[noreturn]] void no_gpu(Device d) {
  throw Error::unsupported("tensors on " + d.str() + " need a build with CUDA");
}

}  // namespace
#endif

Tensor to_device(const Tensor& t, Device device) {
  TANDEM_CHECK(t.defined(), "to_device of an undefined tensor");
  if (t.device() == device) return t;
#ifdef TANDEM_HAVE_CUDA
  if (device.is_cpu()) return cuda::to_host(t);
  if (t.device().is_cpu()) return cuda::to_device(t, device.index);
  return cuda::to_device(cuda::to_host(t), device.index);  // between GPUs, through the host
#else
  no_gpu(device.is_cpu() ? t.device() : device);
#endif
}

void copy_tensor(const Tensor& dst, const Tensor& src) {
  if (dst.device().is_cpu() && src.device().is_cpu()) {
    TANDEM_CHECK(dst.desc() == src.desc(),
                 "copy between " + dst.desc().str() + " and " + src.desc().str());
    if (src.bytes()) std::memcpy(dst.raw(), src.raw(), src.bytes());
    return;
  }
#ifdef TANDEM_HAVE_CUDA
  if (dst.device().is_cpu() || src.device().is_cpu() || dst.device() == src.device()) {
    cuda::copy_tensor(dst, src);
    return;
  }
  cuda::copy_tensor(dst, cuda::to_host(src));
#else
  no_gpu(dst.device().is_cpu() ? src.device() : dst.device());
#endif
}

Tensor zeros_on(Device device, DType dtype, const Shape& shape) {
  if (device.is_cpu()) return Tensor::zeros(dtype, shape);
  const TrainBackend& be = train_backend(device);
  Tensor t = be.empty(be.ctx, dtype, shape);
  zero_tensor(t);
  return t;
}

void zero_tensor(const Tensor& t) {
  if (t.device().is_cpu()) {
    if (t.bytes()) std::memset(t.raw(), 0, t.bytes());
    return;
  }
#ifdef TANDEM_HAVE_CUDA
  cuda::zero_device_tensor(t);
#else
  no_gpu(t.device());
#endif
}

}  // namespace tandem::train
