#include "train/split/device_link.h"

#ifdef TANDEM_HAVE_CUDA
#include "cuda/async_copy.h"
#endif

namespace tandem::train {

namespace {

class Ready : public HostCopy {
 public:
  explicit Ready(Tensor t) : t_(std::move(t)) {}
  const Tensor& wait() override { return t_; }

 private:
  Tensor t_;
};

#ifdef TANDEM_HAVE_CUDA
class InFlight : public HostCopy {
 public:
  explicit InFlight(cuda::PendingHostCopy p) : p_(std::move(p)) {}
  const Tensor& wait() override { return p_.wait(); }

 private:
  cuda::PendingHostCopy p_;
};
#endif

}  // namespace

DeviceLink::DeviceLink(Device home) : home_(home) {
  if (home.is_cpu()) return;
#ifdef TANDEM_HAVE_CUDA
  check_supported(home.kind == DeviceKind::cuda, "a split layer's home must be the CPU or a CUDA GPU, got " + home.str());
  copies_ = !cuda::shares_host_memory(home.index);
#else
  throw Error::unsupported("a layer split with " + home.str() + " needs a build with CUDA");
#endif
}

Tensor DeviceLink::host_empty(const Shape& shape) const {
#ifdef TANDEM_HAVE_CUDA
  if (copies_) return cuda::pinned_empty(home_.index, DType::f32, shape);
#endif
  return Tensor::empty(DType::f32, shape);
}

std::unique_ptr<HostCopy> DeviceLink::to_host(const Tensor& t) const {
  if (t.device().is_cpu()) return std::make_unique<Ready>(t);
#ifdef TANDEM_HAVE_CUDA
  return std::make_unique<InFlight>(cuda::start_copy_to_host(t));
#else
  throw Error::unsupported("a tensor on " + t.device().str() + " needs a build with CUDA");
#endif
}

Tensor DeviceLink::to_home(const Tensor& host) const {
  if (home_.is_cpu()) return host;
#ifdef TANDEM_HAVE_CUDA
  return cuda::copy_to_device_async(host, home_.index);
#else
  return host;  // unreachable: the constructor refused a GPU home
#endif
}

void DeviceLink::synchronize() const {
#ifdef TANDEM_HAVE_CUDA
  if (!home_.is_cpu()) cuda::synchronize(home_.index);
#endif
}

}  // namespace tandem::train
