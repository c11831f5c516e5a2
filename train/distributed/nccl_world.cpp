// The Communicator of GPU ranks: NCCL for GPU tensors, the launcher's
// channel (MPI) for the rest.
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "train/distributed/communicator.h"

#ifdef TANDEM_HAVE_CUDA
#include "cuda/nccl_group.h"
#endif

namespace tandem::train {

#ifdef TANDEM_HAVE_CUDA

namespace {

class NcclPendingSum : public PendingCollective {
 public:
  explicit NcclPendingSum(std::unique_ptr<cuda::NcclGroup::Pending> p) : p_(std::move(p)) {}
  void wait() override { p_->wait(); }

 private:
  std::unique_ptr<cuda::NcclGroup::Pending> p_;
};

// Rank 0's new id, on every rank.
std::string shared_id(Communicator& host) {
  std::string id = host.rank() == 0 ? cuda::nccl_unique_id() : std::string();
  int64_t size = int64_t(id.size());
  Tensor n = Tensor::wrap(TensorDesc{DType::i64, {1}, Layout::plain}, &size);
  host.broadcast(n, 0);
  id.resize(size_t(size));
  Tensor bytes = Tensor::wrap(TensorDesc{DType::u8, {size}, Layout::plain}, id.data());
  host.broadcast(bytes, 0);
  return id;
}

class NcclWorld : public Communicator {
 public:
  NcclWorld(std::unique_ptr<Communicator> host, int device)
      : host_(std::move(host)), group_(device, host_->size(), host_->rank(), shared_id(*host_)) {}

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  int local_rank() const override { return host_->local_rank(); }

  std::unique_ptr<PendingCollective> sum_async(Tensor t) override {
    if (t.device().is_cpu()) return host_->sum_async(std::move(t));
    check(t.dtype() == DType::f32, "the gradient sum takes f32 tensors, got " + t.desc().str());
    check(t.device().index == group_.device(), "a gradient on " + t.device().str() + " in the NCCL group of cuda:" +
                                                   std::to_string(group_.device()));
    return std::make_unique<NcclPendingSum>(group_.sum_async(t.data<float>(), size_t(t.numel())));
  }
  void sum(std::span<double> values) override { host_->sum(values); }
  void broadcast(Tensor t, int root) override { host_->broadcast(std::move(t), root); }
  [[noreturn]] void abort(int code) override {
    host_->abort(code);
    std::_Exit(code);  // not reached: the host's abort ends the process
  }

 private:
  std::unique_ptr<Communicator> host_;
  cuda::NcclGroup group_;
};

}  // namespace

bool nccl_available(std::string* why_not) { return cuda::nccl_available(why_not); }

std::unique_ptr<Communicator> with_nccl(std::unique_ptr<Communicator> host, int device) {
  return std::make_unique<NcclWorld>(std::move(host), device);
}

#else

bool nccl_available(std::string* why_not) {
  if (why_not) *why_not = "this tandem was built without CUDA";
  return false;
}

std::unique_ptr<Communicator> with_nccl(std::unique_ptr<Communicator>, int) {
  throw Error::unsupported("this tandem was built without CUDA: GPU ranks need its NCCL");
}

#endif

}  // namespace tandem::train
