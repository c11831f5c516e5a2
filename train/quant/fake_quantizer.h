#pragma once
// Quantization-aware training's observer + fake quantizer, as PyTorch's
// torch.ao.quantization.FakeQuantize with a moving-average min/max observer
// (averaging constant 0.01) and its qparams rule, so a QAT model trained here
// gets the scales and zero points PyTorch would:
//   activations: per tensor, affine, uint8 [0, 255]
//   weights:     per output channel (axis 0), symmetric, int8 [-128, 127]
// The observer updates in training mode only (PyTorch keeps observing in
// eval until disable_observer(); here eval freezes the qparams).
#include <string>
#include <utility>

#include "train/autograd.h"

namespace tandem::train {

enum class QScheme : uint8_t { per_tensor_affine, per_channel_symmetric };

struct QuantSpec {
  QScheme scheme = QScheme::per_tensor_affine;
  int64_t axis = -1;  // per channel: the channel axis
  int64_t qmin = 0, qmax = 255;
  float averaging = 0.01f;

  static QuantSpec activations() { return {}; }
  static QuantSpec weights() { return {QScheme::per_channel_symmetric, 0, -128, 127, 0.01f}; }
};

// While one lives on this thread, a quantizer in eval mode that has
// observed nothing yet quantizes with its input's own range, leaving its
// state as it was, instead of refusing: the split tuner's eval-mode forward
// (train/split/place.h) runs before the first training step.
class TransientRanges {
 public:
  TransientRanges();
  ~TransientRanges();
  TransientRanges(const TransientRanges&) = delete;
  TransientRanges& operator=(const TransientRanges&) = delete;
  static bool active();

 private:
  bool previous_;
};

class FakeQuantizer {
 public:
  // channels: 1 per tensor, else the extent of spec.axis (the layer's
  // output channels for weights).
  explicit FakeQuantizer(QuantSpec spec = QuantSpec::activations(), int64_t channels = 1);

  // Observes x (training) and returns it fake-quantized with the current
  // qparams. An unobserved quantizer in eval mode is an error. Per channel,
  // x may hold a run of the channels only, from `first_channel` on (a
  // weight whose output channels are split between devices).
  Var operator()(const Var& x, bool training, int64_t first_channel = 0);

  const QuantSpec& spec() const { return spec_; }
  // Whether channel `channel`'s range has been observed.
  bool observed(int64_t channel = 0) const;
  // Host tensors, [channels]: the observed range (f32, +inf/-inf until the
  // first observation; a module registers them as buffers, PyTorch's
  // activation_post_process.min_val/max_val, so checkpoints carry them) and
  // the qparams (scale f32, zero_point i64) derived from it.
  const Tensor& min() const { return min_; }
  const Tensor& max() const { return max_; }
  const Tensor& scale() const { return scale_; }
  const Tensor& zero_point() const { return zero_point_; }
  // The qparams of the observed range as they are now (scale f32, zero
  // point i64, [channels]), whatever mode last ran.
  std::pair<Tensor, Tensor> qparams() const;
  // x's integers under those qparams (i8 for a signed range, else u8): what
  // DequantizeLinear turns back into the fake-quantized x. Per channel, x
  // may hold the channels from `first_channel` on, as above.
  Tensor quantize(const Tensor& x, int64_t first_channel = 0) const;

 private:
  // Per channel: x's channels as [first, first + count) of the quantizer's.
  int64_t channels_of(const Tensor& x, int64_t first_channel) const;
  void observe(const Tensor& x, int64_t first_channel);

  QuantSpec spec_;
  Tensor min_, max_, scale_, zero_point_;
};

}  // namespace tandem::train
