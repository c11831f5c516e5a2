#pragma once
// The split state of one Conv2d or Linear (train/split/split_op.h): its
// weight and bias as Parameters cut at home_rows output channels, rows
// [0, home_rows) on home (a GPU), the rest on the host, each stepped by the
// optimizer where it lives. At home_rows = rows the layer is whole on home
// (plain names, the unsplit layer's code path); otherwise the parameters are
// named as slices (train/split/slice_names.h) and the state_dict, checkpoints
// and export see full tensors.
#include <deque>
#include <optional>
#include <string>

#include "train/parameter.h"
#include "train/quant/fake_quantizer.h"
#include "train/split/device_link.h"
#include "train/split/split_op.h"

namespace tandem::train {

// Quantization-aware training of a split layer: the weight's per-channel
// fake quantizer, and the per-tensor one that put x on its integer grid
// (null when no quantizer is known to have), with the layer's mode.
struct SplitQuant {
  FakeQuantizer* weight = nullptr;
  const FakeQuantizer* input = nullptr;
  bool training = true;
};

// What the tuner measured and chose for one layer (seconds of forward +
// backward), for the trace and the end-of-run summary.
struct SplitTiming {
  bool tuned = false;
  std::string input_shape;  // x's shape when measured
  double t_home = 0;        // the whole layer on home (r = 1)
  double t_host = 0;        // the whole layer on the CPU, copies included (r = 0)
  double t_split = 0;       // the split at the chosen r, measured (t_home when r = 1)
  bool host_int8 = false;   // the host side's last forward ran on integers
};

class ChannelSplit {
 public:
  // `params`: the layer's own parameters, weight [rows, ...] then optionally
  // bias [rows], whole, on any device. `step`: home_rows must be a multiple
  // (a grouped conv's whole-layer step: it splits only at r = 0 or 1). The
  // layer starts whole on home.
  ChannelSplit(std::deque<Parameter>& params, const ChannelOp& op, Device home, int64_t step);
  ChannelSplit(const ChannelSplit&) = delete;
  ChannelSplit& operator=(const ChannelSplit&) = delete;

  // Re-cuts the parameters at `home_rows` (values kept, gradients zeroed),
  // each part on its side (again after a Module::to moved them all).
  // Parameter pointers into the layer dangle afterwards: make the optimizer
  // after the last call.
  void set_home_rows(int64_t home_rows);
  int64_t home_rows() const { return home_rows_; }
  int64_t rows() const { return rows_; }
  int64_t step() const { return step_; }
  double r() const { return double(home_rows_) / double(rows_); }

  // Under quantization-aware training (`quant.weight` set) each side's
  // weights pass through their channels of the fake quantizer, and a conv's
  // host side runs its forward on integers when x's grid is known and
  // host_integers() is on (the default; the tuner turns it off for a layer
  // whose CPU side measured faster in float).
  Var forward(const Var& x, const SplitQuant& quant = {});
  void set_host_integers(bool on) { host_integers_ = on; }
  bool host_integers() const { return host_integers_; }
  // The quantizers of the last forward (what the tuner's measured step uses).
  const SplitQuant& quant() const { return quant_; }
  // Whether the host side runs on integers under `quant`: a conv with
  // host_integers() on, its weights and its input under the quantizers
  // qconv2d_forward takes (i8 per channel, u8 per tensor).
  bool integer_host(const SplitQuant& quant) const;
  // Its integer form (the weight scales of the host's current channels), or
  // nothing: in float, or the input's quantizer has observed nothing yet.
  std::optional<HostIntegers> host_integer_form(const SplitQuant& quant) const;
  // Sets the gradients of the split's parameters to zero.
  void zero_grad();
  // Host copies of the whole weight and bias (undefined without a bias).
  Tensor full_weight() const;
  Tensor full_bias() const;
  const ChannelOp& op() const { return op_; }
  const DeviceLink& link() const { return link_; }
  const std::string& name() const { return weight_name_; }  // the weight's plain name
  const std::string& layer() const { return layer_; }       // the layer's: name() less ".weight"
  const std::string& bias_name() const { return bias_name_; }

  SplitTiming timing;
  // Auto-tuning (train/split/place.h): pending until prepare_split's
  // forward, which tunes at the layer's real x; a training forward while
  // still pending is an Error (re-cutting would strand the optimizer).
  enum class Tune : uint8_t { none, pending, now };
  Tune tune = Tune::none;
  // A layer cut at a fixed share: prepare_split's forward times its CPU
  // side in float and on integers (QAT) and keeps the faster.
  bool choose_host_form = false;

 private:
  Tensor full(size_t which) const;
  bool placed() const;  // every part on its side

  std::deque<Parameter>& params_;
  ChannelOp op_;
  DeviceLink link_;
  int64_t rows_ = 0, step_ = 1, home_rows_ = 0;
  bool has_bias_ = false;
  std::string weight_name_, bias_name_, layer_;
  SplitZones zones_{};
  bool weight_decay_ = true, bias_decay_ = false;
  bool host_integers_ = true;
  SplitQuant quant_;
  Parameter *w_home_ = nullptr, *b_home_ = nullptr, *w_host_ = nullptr, *b_host_ = nullptr;
};

// A Conv2d's or Linear's weight and bias as its export sees them: whole,
// under their plain names (bias undefined when absent), split or not.
struct WholeParameters {
  std::string weight_name, bias_name;
  Tensor weight, bias;
};
WholeParameters whole_parameters(const ChannelSplit* split, const Parameter* weight, const Parameter* bias);

}  // namespace tandem::train
