#include "train/split/channel_split.h"

#include <cstring>

#include "train/device_tensor.h"
#include "train/split/slice_names.h"
#include "train/split/tuner.h"

namespace tandem::train {

namespace {

// Rows [begin, end) of host tensor `full`, on `device`.
Tensor rows_on(const Tensor& full, int64_t begin, int64_t end, Device device) {
  Shape s = full.shape();
  s[0] = end - begin;
  Tensor part = Tensor::empty(full.dtype(), s);
  size_t row = full.dim(0) ? full.bytes() / size_t(full.dim(0)) : 0;
  if (part.bytes()) std::memcpy(part.raw(), static_cast<const char*>(full.raw()) + size_t(begin) * row, part.bytes());
  return to_device(part, device);
}

}  // namespace

ChannelSplit::ChannelSplit(std::deque<Parameter>& params, const ChannelOp& op, Device home, int64_t step)
    : params_(params), op_(op), link_(home), step_(step) {
  check(params.size() == 1 || params.size() == 2, "a split layer has a weight and an optional bias");
  const Parameter& w = params.front();
  check(w.value.rank() >= 2 && w.value.dim(0) > 0 && step > 0 && w.value.dim(0) % step == 0,
        "split of '" + w.name + "' " + w.value.desc().str() + " in steps of " + std::to_string(step));
  rows_ = w.value.dim(0);
  weight_name_ = w.name;
  layer_ = w.name.ends_with(".weight") ? w.name.substr(0, w.name.size() - 7) : w.name;
  zones_ = split_zones(layer_, home);
  weight_decay_ = w.decay;
  has_bias_ = params.size() == 2;
  if (has_bias_) bias_name_ = params.back().name, bias_decay_ = params.back().decay;
  home_rows_ = -1;  // not cut yet: set_home_rows re-makes the parameters
  set_home_rows(rows_);
}

Tensor ChannelSplit::full(size_t which) const {
  NamedTensors parts;
  const std::string& plain = which == 0 ? weight_name_ : bias_name_;
  for (const Parameter& p : params_)
    if (p.name.compare(0, plain.size(), plain) == 0 && (p.name.size() == plain.size() || p.name[plain.size()] == '['))
      parts.emplace_back(p.name, p.value);
  NamedTensors whole = gather_slices(parts);
  check(whole.size() == 1, "split layer '" + plain + "' lost its parameters");
  return to_host(whole.front().second);
}

Tensor ChannelSplit::full_weight() const { return full(0); }
Tensor ChannelSplit::full_bias() const { return has_bias_ ? full(1) : Tensor(); }

void ChannelSplit::set_home_rows(int64_t home_rows) {
  check(home_rows >= 0 && home_rows <= rows_ && home_rows % step_ == 0,
        "split of '" + weight_name_ + "': " + std::to_string(home_rows) + " of " + std::to_string(rows_) +
            " channels on the home device (steps of " + std::to_string(step_) + ")");
  if (home_rows == home_rows_ && placed()) return;
  const Tensor w = home_rows_ < 0 ? to_host(params_.front().value) : full_weight();
  const Tensor b = !has_bias_ ? Tensor() : home_rows_ < 0 ? to_host(params_.back().value) : full_bias();
  std::deque<Parameter> made;
  auto add = [&](const std::string& name, const Tensor& full, bool decay, int64_t begin, int64_t end, Device d) {
    Tensor value = rows_on(full, begin, end, d);
    made.push_back(Parameter{slice_name(name, begin, end, rows_), value, zeros_on(d, DType::f32, value.shape()), decay});
  };
  const Device home = link_.home();
  if (home_rows > 0) add(weight_name_, w, weight_decay_, 0, home_rows, home);
  if (home_rows < rows_) add(weight_name_, w, weight_decay_, home_rows, rows_, Device::cpu());
  if (has_bias_ && home_rows > 0) add(bias_name_, b, bias_decay_, 0, home_rows, home);
  if (has_bias_ && home_rows < rows_) add(bias_name_, b, bias_decay_, home_rows, rows_, Device::cpu());
  params_ = std::move(made);
  home_rows_ = home_rows;
  size_t i = 0;
  w_home_ = home_rows > 0 ? &params_[i++] : nullptr;
  w_host_ = home_rows < rows_ ? &params_[i++] : nullptr;
  b_home_ = has_bias_ && home_rows > 0 ? &params_[i++] : nullptr;
  b_host_ = has_bias_ && home_rows < rows_ ? &params_[i++] : nullptr;
}

bool ChannelSplit::placed() const {
  for (const Parameter& p : params_) {
    const bool home_part = &p == w_home_ || &p == b_home_;
    if (p.value.device() != (home_part ? link_.home() : Device::cpu())) return false;
  }
  return true;
}

void ChannelSplit::zero_grad() {
  for (Parameter& p : params_) zero_tensor(p.grad);
}

bool ChannelSplit::integer_host(const SplitQuant& quant) const {
  const FakeQuantizer* in = quant.input;
  if (!host_integers_ || !quant.weight || !in || op_.kind != ChannelOp::Kind::conv2d) return false;
  const QuantSpec& x = in->spec();
  const QuantSpec& w = quant.weight->spec();
  return x.scheme == QScheme::per_tensor_affine && x.qmin == 0 && x.qmax == 255 &&
         w.scheme == QScheme::per_channel_symmetric && w.axis == 0 && w.qmin == -128 &&
         w.qmax == 127;
}

std::optional<HostIntegers> ChannelSplit::host_integer_form(const SplitQuant& quant) const {
  const FakeQuantizer* in = quant.input;
  if (!integer_host(quant) || !in->observed()) return {};
  HostIntegers h;
  const auto [x_scale, x_zero_point] = in->qparams();
  h.q.x_scale = x_scale.data<float>()[0];
  h.q.x_zero_point = x_zero_point.data<int64_t>()[0];
  if (w_host_ && quant.weight->observed()) {
    const Tensor w_scales = quant.weight->qparams().first;
    h.q.w_scales.assign(w_scales.data<float>() + home_rows_, w_scales.data<float>() + rows_);
  }
  return h;
}

Var ChannelSplit::forward(const Var& x, const SplitQuant& quant) {
  check(tune != Tune::pending, "split layer '" + weight_name_ +
                                   "' is set to auto but not tuned: call prepare_split before making the optimizer");
  quant_ = quant;
  if (tune == Tune::now) {
    tune = Tune::none;
    tune_split(*this, x.value());
  } else if (choose_host_form) {
    choose_host_form = false;
    choose_cpu_form(*this, x.value());
  }
  auto var = [](Parameter* p) { return p ? Var::of(*p) : Var(); };
  Var w_home = var(w_home_), w_host = var(w_host_);
  if (quant.weight) {
    if (w_home.defined()) w_home = (*quant.weight)(w_home, quant.training, 0);
    if (w_host.defined()) w_host = (*quant.weight)(w_host, quant.training, home_rows_);
  }
  if (!w_host_) return channel_forward(x, w_home, var(b_home_), op_);
  std::optional<HostIntegers> ints = host_integer_form(quant);
  Var y = split_forward(x, SplitVars{w_home, var(b_home_), w_host, var(b_host_)}, op_, link_,
                        zones_, ints ? &*ints : nullptr);
  timing.host_int8 = ints && ints->ran;
  return y;
}

WholeParameters whole_parameters(const ChannelSplit* split, const Parameter* weight, const Parameter* bias) {
  if (split) return {split->name(), split->bias_name(), split->full_weight(), split->full_bias()};
  return {weight->name, bias ? bias->name : "", weight->value, bias ? bias->value : Tensor()};
}

}  // namespace tandem::train
