#include "train/quant/fake_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "train/backend.h"
#include "train/device_tensor.h"
#include "train/functional.h"

namespace tandem::train {

FakeQuantizer::FakeQuantizer(QuantSpec spec, int64_t channels) : spec_(spec) {
  check(spec_.qmin < spec_.qmax, "fake quantizer: empty integer range");
  check(channels > 0 && (channels == 1 || spec_.scheme != QScheme::per_tensor_affine),
        "fake quantizer: per tensor means one channel, got " + std::to_string(channels));
  min_ = Tensor::empty(DType::f32, {channels});
  max_ = Tensor::empty(DType::f32, {channels});
  for (int64_t i = 0; i < channels; ++i) {
    min_.data<float>()[i] = std::numeric_limits<float>::infinity();
    max_.data<float>()[i] = -std::numeric_limits<float>::infinity();
  }
}

bool FakeQuantizer::observed(int64_t channel) const {
  return std::isfinite(min_.data<float>()[channel]);
}

int64_t FakeQuantizer::channels_of(const Tensor& x, int64_t first_channel) const {
  const int64_t axis = spec_.scheme == QScheme::per_tensor_affine ? -1 : spec_.axis;
  const int64_t n = axis < 0 ? 1 : axis < x.rank() ? x.dim(axis) : 0;
  check(first_channel >= 0 && n > 0 && first_channel + n <= min_.numel() &&
            (axis >= 0 || first_channel == 0),
        "fake quantizer for " + std::to_string(min_.numel()) + " channels given " + x.desc().str() +
            " from channel " + std::to_string(first_channel));
  return n;
}

// torch.aminmax, then the moving average; both in float32 as PyTorch's
// tensor arithmetic (min + c * (cur - min)). The extremes are taken where x
// lives and read back: a few floats per step.
void FakeQuantizer::observe(const Tensor& x, int64_t first_channel) {
  const TrainBackend& be = train_backend(x.device());
  const int64_t axis = spec_.scheme == QScheme::per_tensor_affine ? -1 : spec_.axis;
  const int64_t n = channels_of(x, first_channel);
  check_supported(be.min_max != nullptr, std::string("QAT observers on ") + be.name);
  Tensor lo = be.empty(be.ctx, DType::f32, {n}), hi = be.empty(be.ctx, DType::f32, {n});
  be.min_max(be.ctx, x, axis, lo, hi);
  lo = to_host(lo), hi = to_host(hi);
  const bool first = !observed(first_channel);  // taken as it is
  const float c = spec_.averaging;
  float* mn = min_.data<float>() + first_channel;
  float* mx = max_.data<float>() + first_channel;
  const float* l = lo.data<float>();
  const float* h = hi.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    mn[i] = first ? l[i] : mn[i] + c * (l[i] - mn[i]);
    mx[i] = first ? h[i] : mx[i] + c * (h[i] - mx[i]);
  }
}

// PyTorch's ObserverBase._calculate_qparams for quint8 affine and qint8
// symmetric, in float32; torch.round is round-half-even (nearbyint).
std::pair<Tensor, Tensor> FakeQuantizer::qparams() const {
  const int64_t n = min_.numel();
  Tensor scale = Tensor::empty(DType::f32, {n});
  Tensor zero_point = Tensor::empty(DType::i64, {n});
  const float eps = std::numeric_limits<float>::epsilon();
  const float* mn = min_.data<float>();
  const float* mx = max_.data<float>();
  float* s = scale.data<float>();
  int64_t* z = zero_point.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const float lo = std::min(mn[i], 0.f), hi = std::max(mx[i], 0.f);
    if (spec_.scheme == QScheme::per_channel_symmetric) {
      const float amax = std::max(-lo, hi);
      s[i] = std::max(amax / (float(spec_.qmax - spec_.qmin) / 2.f), eps);
      z[i] = spec_.qmin < 0 ? 0 : (spec_.qmin + spec_.qmax + 1) / 2;
    } else {
      s[i] = std::max((hi - lo) / float(spec_.qmax - spec_.qmin), eps);
      const int64_t zp = spec_.qmin - int64_t(std::nearbyint(lo / s[i]));
      z[i] = std::clamp(zp, spec_.qmin, spec_.qmax);
    }
  }
  return {scale, zero_point};
}

namespace {

// Values [first, first + n) of a [channels] host tensor.
Tensor channel_run(const Tensor& t, int64_t first, int64_t n) {
  if (first == 0 && n == t.numel()) return t;
  Tensor r = Tensor::empty(t.dtype(), {n});
  const size_t e = dtype_size(t.dtype());
  std::memcpy(r.raw(), static_cast<const char*>(t.raw()) + size_t(first) * e, size_t(n) * e);
  return r;
}

thread_local bool transient_ranges = false;

}  // namespace

TransientRanges::TransientRanges() : previous_(transient_ranges) { transient_ranges = true; }
TransientRanges::~TransientRanges() { transient_ranges = previous_; }
bool TransientRanges::active() { return transient_ranges; }

Var FakeQuantizer::operator()(const Var& x, bool training, int64_t first_channel) {
  const int64_t n = channels_of(x.value(), first_channel);
  const bool unobserved = !observed(first_channel);
  const bool transient = !training && unobserved && TransientRanges::active();
  const Tensor kept_min = transient ? min_.clone() : Tensor(),
               kept_max = transient ? max_.clone() : Tensor();
  if (training || transient) observe(x.value(), first_channel);
  check(training || !unobserved || transient,
        "fake quantizer used in eval mode before any training step observed its input");
  // Also in eval: a range restored from a checkpoint has no qparams yet.
  std::tie(scale_, zero_point_) = qparams();
  if (transient) {  // in place: the module's buffers share these tensors
    std::memcpy(min_.raw(), kept_min.raw(), min_.bytes());
    std::memcpy(max_.raw(), kept_max.raw(), max_.bytes());
  }
  const int64_t axis = spec_.scheme == QScheme::per_tensor_affine ? -1 : spec_.axis;
  return fake_quantize(x, channel_run(scale_, first_channel, n),
                       channel_run(zero_point_, first_channel, n),
                       ops::FakeQuantParams{axis, spec_.qmin, spec_.qmax});
}

Tensor FakeQuantizer::quantize(const Tensor& x, int64_t first_channel) const {
  check(observed(), "quantize: the fake quantizer has observed nothing yet");
  check(x.dtype() == DType::f32 && x.device().is_cpu(), "quantize: f32 host tensors only, got " + x.desc().str());
  const int64_t channels = channels_of(x, first_channel);
  auto [all_scales, all_zero_points] = qparams();
  const Tensor scale = channel_run(all_scales, first_channel, channels);
  const Tensor zero_point = channel_run(all_zero_points, first_channel, channels);
  const int64_t axis = spec_.scheme == QScheme::per_tensor_affine ? -1 : spec_.axis;
  int64_t inner = 1;
  for (int64_t i = axis + 1; axis >= 0 && i < x.rank(); ++i) inner *= x.dim(i);
  Tensor out = Tensor::empty(spec_.qmin < 0 ? DType::i8 : DType::u8, x.shape());
  const float* xs = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = axis < 0 ? 0 : (i / inner) % channels;
    const float s = scale.data<float>()[c];
    const int64_t z = zero_point.data<int64_t>()[c];
    // ops/fake_quant.h's rounding, so dequantizing gives the fake-quantized value.
    const int64_t v = std::clamp<int64_t>(ops::quantized(xs[i], s, z), spec_.qmin, spec_.qmax);
    if (spec_.qmin < 0)
      out.data<int8_t>()[i] = int8_t(v);
    else
      out.data<uint8_t>()[i] = uint8_t(v);
  }
  return out;
}

}  // namespace tandem::train
