#include "train/distributed/gradient_sync.h"

#include <string>

#include "profile/zone.h"
#include "train/device_tensor.h"
#include "train/optim/device_math.h"

namespace tandem::train {

namespace {

// Element `offset` of bucket `flat` onward, seen as a tensor shaped like `like`.
Tensor view_in(const Tensor& flat, int64_t offset, const Tensor& like) {
  TensorDesc d{DType::f32, like.shape(), Layout::plain};
  return Tensor::wrap(d, flat.data<float>() + offset, flat.device());
}

void scale(const Tensor& flat, double factor) {
  if (factor == 1) return;
  if (!flat.device().is_cpu()) {
    scale_on_device({&flat, 1}, float(factor));
    return;
  }
  float* x = flat.data<float>();
  const float f = float(factor);
  for (int64_t i = 0, n = flat.numel(); i < n; ++i) x[i] *= f;
}

}  // namespace

GradientSync::GradientSync(Communicator& comm, const ParameterList& params, int64_t bucket_bytes)
    : comm_(comm), params_(params) {
  check(bucket_bytes > 0, "gradient buckets need a positive size");
  bucket_of_.resize(params_.size());
  offset_of_.resize(params_.size());
  done_.assign(params_.size(), false);
  // Backward completes the last layers' gradients first: buckets follow the
  // parameters from the last.
  std::vector<int64_t> elems;
  for (size_t k = params_.size(); k-- > 0;) {
    Parameter& p = *params_[k];
    check(p.grad.defined() && p.grad.dtype() == DType::f32 && p.grad.layout() == Layout::plain,
          "data-parallel gradients must be plain f32 tensors; parameter '" + p.name + "' has " +
              (p.grad.defined() ? p.grad.desc().str() : std::string("none")));
    const bool fits = !buckets_.empty() && params_[buckets_.back().members.front()]->grad.device() == p.grad.device() &&
                      (elems.back() + p.grad.numel()) * 4 <= bucket_bytes;
    if (!fits) {
      buckets_.emplace_back();
      elems.push_back(0);
    }
    bucket_of_[k] = buckets_.size() - 1;
    offset_of_[k] = elems.back();
    elems.back() += p.grad.numel();
    buckets_.back().members.push_back(k);
    check(index_of_.emplace(p.grad.raw(), k).second, "parameter '" + p.name + "' shares its gradient with another");
  }
  for (size_t b = 0; b < buckets_.size(); ++b)
    buckets_[b].flat = zeros_on(params_[buckets_[b].members.front()]->grad.device(), DType::f32, {elems[b]});
}

GradientSync::~GradientSync() = default;

void GradientSync::begin(double share) {
  check(!in_step_, "GradientSync::begin twice without finish");
  share_ = share;
  in_step_ = true;
  next_launch_ = 0;
  done_.assign(params_.size(), false);
  for (Bucket& b : buckets_) b.ready = 0;
}

void GradientSync::gradient_ready(const Tensor& grad) {
  if (!in_step_ || !grad.defined()) return;
  auto it = index_of_.find(grad.raw());
  if (it == index_of_.end()) return;
  const size_t k = it->second;
  // A parameter read twice in one forward has two leaves; its gradient is
  // complete only after both, which this hook cannot tell.
  check(!done_[k], "parameter '" + params_[k]->name +
                       "' is used twice in one forward: data-parallel training does not share weights yet");
  done_[k] = true;
  Bucket& b = buckets_[bucket_of_[k]];
  if (++b.ready < b.members.size()) return;
  // Buckets start in the same order on every rank (MPI and NCCL match
  // collectives by order), so a full bucket waits for those before it.
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].ready == buckets_[next_launch_].members.size())
    launch(buckets_[next_launch_++]);
}

void GradientSync::launch(Bucket& b) {
  TANDEM_ZONE_CAT("gradient sum start", "train");
  for (size_t k : b.members) copy_tensor(view_in(b.flat, offset_of_[k], params_[k]->grad), params_[k]->grad);
  scale(b.flat, share_);
  b.pending = comm_.sum_async(b.flat);
}

void GradientSync::finish() {
  check(in_step_, "GradientSync::finish without begin");
  while (next_launch_ < buckets_.size()) launch(buckets_[next_launch_++]);
  TANDEM_ZONE_CAT("gradient sum wait", "train");
  for (Bucket& b : buckets_) {
    b.pending->wait();
    b.pending.reset();
    for (size_t k : b.members) copy_tensor(params_[k]->grad, view_in(b.flat, offset_of_[k], params_[k]->grad));
  }
  in_step_ = false;
}

}  // namespace tandem::train
