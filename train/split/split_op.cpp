#include "train/split/split_op.h"

#include "profile/dynamic_location.h"
#include "profile/zone.h"
#include "train/autocast.h"
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

Shape ChannelOp::output_shape(const Shape& x, const Shape& w) const {
  return kind == Kind::conv2d ? ops::conv2d_output_shape(conv, x, w) : ops::linear_output_shape(x, w);
}

void ChannelOp::forward(const TrainBackend& be, const Tensor& x, const Tensor& w, const Tensor& b,
                        const Tensor& y) const {
  if (kind == Kind::conv2d) be.conv2d_forward(be.ctx, conv, x, w, b, y);
  else be.linear_forward(be.ctx, x, w, b, y);
}

void ChannelOp::backward(const TrainBackend& be, const Tensor& x, const Tensor& w, const Tensor& dy,
                         const GradOut& dx, const GradOut& dw, const GradOut& db) const {
  if (kind == Kind::conv2d) be.conv2d_backward(be.ctx, conv, x, w, dy, dx, dw, db);
  else be.linear_backward(be.ctx, x, w, dy, dx, dw, db);
}

SplitZones split_zones(const std::string& layer, Device home) {
  const std::string h = "split " + layer + (home.is_cpu() ? " home " : " gpu "), c = "split " + layer + " cpu ";
  return {profile::dynamic_location(h + "forward", "split"), profile::dynamic_location(c + "forward", "split"),
          profile::dynamic_location(h + "backward", "split"), profile::dynamic_location(c + "backward", "split")};
}

Var channel_forward(const Var& x, const Var& w, const Var& b, const ChannelOp& op) {
  return op.kind == ChannelOp::Kind::conv2d ? conv2d(x, w, b, op.conv) : linear(x, w, b);
}

namespace {

Tensor value_or_none(const Var& v) { return v.defined() ? v.value() : Tensor(); }

// The host side's output channels, computed on the calling thread: on
// integers where `ints` asks and the values allow it.
Tensor host_forward(const ChannelOp& op, const Tensor& x_host, const SplitVars& v,
                    const DeviceLink& link, const SplitZones& zones, HostIntegers* ints) {
  TANDEM_ZONE_AT(zones.host_forward);
  const TrainBackend& cpu = train_backend(Device::cpu());
  Tensor y = link.host_empty(op.output_shape(x_host.shape(), v.w_host.shape()));
  if (ints) {
    ints->ran = op.kind == ChannelOp::Kind::conv2d && cpu.qconv2d_forward &&
                cpu.qconv2d_forward(cpu.ctx, op.conv, ints->q, x_host, v.w_host.value(),
                                    value_or_none(v.b_host), y);
    if (ints->ran) return y;
  }
  op.forward(cpu, x_host, v.w_host.value(), value_or_none(v.b_host), y);
  return y;
}

// inputs: x, w_home, b_home, w_host, b_host (undefined ones kept as placeholders).
struct SplitFn : GradFn {
  SplitFn(const ChannelOp& o, const DeviceLink& l, Tensor xh, const SplitZones& z)
      : op(o), link(l), x_host(std::move(xh)), zones(z) {}
  const char* name() const override { return "split"; }

  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    const TrainBackend& home = *backend;
    const Var &x = inputs[0], &w_home = inputs[1], &w_host = inputs[3];
    const int64_t home_rows = w_home.defined() ? w_home.shape()[0] : 0;
    Tensor dy_home, dy_host = dy;
    if (home_rows > 0) {
      // dy's channels -> the two sides' parts (on home).
      const int64_t extents[2] = {home_rows, w_host.shape()[0]};
      Shape sh = dy.shape(), sc = dy.shape();
      sh[1] = extents[0], sc[1] = extents[1];
      dy_home = empty_f32(home, sh), dy_host = empty_f32(home, sc);
      const GradOut parts[2] = {{dy_home, GradMode::overwrite}, {dy_host, GradMode::overwrite}};
      home.concat_backward(home.ctx, 1, dy, std::span<const int64_t>(extents), std::span<const GradOut>(parts));
    }
    std::unique_ptr<HostCopy> dy_copy = link.to_host(dy_host);
    if (home_rows > 0) {
      TANDEM_ZONE_AT(zones.home_backward);
      op.backward(home, x.value(), w_home.value(), dy_home, d[0], d[1], d[2]);
    }
    const Tensor& dy_h = dy_copy->wait();
    Tensor dx_part;
    {
      TANDEM_ZONE_AT(zones.host_backward);
      const TrainBackend& cpu = train_backend(Device::cpu());
      if (d[0].wanted()) dx_part = link.host_empty(x_host.shape());
      op.backward(cpu, x_host, w_host.value(), dy_h, {dx_part, GradMode::overwrite}, d[3], d[4]);
    }
    if (!d[0].wanted()) return;
    // The partial input gradients summed once, on home: added to the home
    // side's part, or (home has no rows) written as d[0] asks.
    GradOut dx = home_rows > 0 ? GradOut{d[0].t, GradMode::accumulate} : d[0];
    home.sum_to(home.ctx, link.to_home(dx_part), dx);
  }

  ChannelOp op;
  DeviceLink link;
  Tensor x_host;  // x as the host side read it (kept for its weight gradient)
  SplitZones zones;
};

}  // namespace

Var split_forward(const Var& x_in, const SplitVars& v, const ChannelOp& op_in,
                  const DeviceLink& link, const SplitZones& zones, HostIntegers* ints) {
  // Both sides take plain f32 activations (the CPU table keeps no 16-bit or
  // channels-last ones).
  const Var x = x_in.defined() ? convert(x_in, DType::f32, Layout::plain) : x_in;
  check(v.w_host.defined() && v.w_host.device().is_cpu(), "a split layer needs its host part on the host");
  check(x.device() == link.home() && (!v.w_home.defined() || v.w_home.device() == link.home()),
        std::string("split ") + op_in.name() + ": x and the home part must live on " + link.home().str() + ", x is on " +
            x.device().str());
  ChannelOp op = op_in;
  if (op.kind == ChannelOp::Kind::conv2d && op.conv.compute == DType::f32) op.conv.compute = autocast_dtype();
  const TrainBackend& home = train_backend(link.home());
  std::unique_ptr<HostCopy> x_copy = link.to_host(x.value());
  Tensor y_home;
  if (v.w_home.defined()) {
    TANDEM_ZONE_AT(zones.home_forward);
    y_home = empty_f32(home, op.output_shape(x.shape(), v.w_home.shape()));
    op.forward(home, x.value(), v.w_home.value(), value_or_none(v.b_home), y_home);
  }
  const Tensor& x_host = x_copy->wait();
  Tensor y_host = link.to_home(host_forward(op, x_host, v, link, zones, ints));
  Tensor y = y_host;
  if (y_home.defined()) {
    const Tensor parts[2] = {y_home, y_host};
    y = empty_f32(home, ops::concat_output_shape(std::span<const Tensor>(parts), 1));
    home.concat_forward(home.ctx, 1, std::span<const Tensor>(parts), y);
  }
  return record<SplitFn>(std::move(y), home, {x, v.w_home, v.b_home, v.w_host, v.b_host}, op, link, x_host, zones);
}

}  // namespace tandem::train
