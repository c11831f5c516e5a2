#pragma once
// One Conv2d or Linear whose output channels are split between a home device
// (a GPU: the activations live there) and the host, forward and backward:
//   y  = concat_channels(op(x, w_home), op(x, w_host))   (concat on home)
//   dy -> dy_home, dy_host; each side its dw, db and PARTIAL dx;
//   dx = dx_home + dx_host, the host's part copied to home and summed once.
// Each side's weight gradient is computed where the weight lives. Copies go
// through a DeviceLink (none when home is the CPU or shares its memory).
#include "ops/train_backend.h"
#include "train/autograd.h"
#include "train/split/device_link.h"

namespace tandem::train {

// The kernels a split layer runs on each side.
struct ChannelOp {
  enum class Kind : uint8_t { conv2d, linear };
  Kind kind = Kind::conv2d;
  ops::Conv2dParams conv;  // conv2d only

  const char* name() const { return kind == Kind::conv2d ? "conv2d" : "linear"; }
  Shape output_shape(const Shape& x, const Shape& w) const;
  void forward(const TrainBackend& be, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y) const;
  void backward(const TrainBackend& be, const Tensor& x, const Tensor& w, const Tensor& dy, const GradOut& dx,
                const GradOut& dw, const GradOut& db) const;
};

// A split layer's parameters as Vars: the first rows of the output channels
// on home (undefined when home has none), the others on the host (defined).
// Biases are undefined when the layer has none.
struct SplitVars {
  Var w_home, b_home, w_host, b_host;
};

// The profiler zones of one split layer's two sides, so that `--profile`
// shows each layer's CPU and GPU part ("split features.0 gpu forward", ...).
struct SplitZones {
  const profile::SourceLocation *home_forward, *host_forward, *home_backward, *host_backward;
};
SplitZones split_zones(const std::string& layer, Device home);

// Quantization-aware training of a split conv: x and the host's weights
// come out of fake quantizers, x's per tensor on the u8 grid of (x_scale,
// x_zero_point), the weights' per output channel on the i8 grid of
// w_scales (the host's channels). The host side then runs its forward on
// integers (TrainBackend::qconv2d_forward), the backward in float on the
// same values (the straight-through estimator's).
struct HostIntegers {
  ops::QConvParams q;
  bool ran = false;  // set by split_forward: the host's forward ran on integers
};

// The op over all output channels, split as `v` says; x on the link's home.
// Returns a Var on home. With `ints`, the host side's forward runs on
// integers where x and its weights are on their grids (else in float).
Var split_forward(const Var& x, const SplitVars& v, const ChannelOp& op, const DeviceLink& link,
                  const SplitZones& zones, HostIntegers* ints = nullptr);

// The op on one device only (the unsplit layer, or a side alone when tuning).
Var channel_forward(const Var& x, const Var& w, const Var& b, const ChannelOp& op);

}  // namespace tandem::train
