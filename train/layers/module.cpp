#include "train/layers/module.h"

#include "profile/dynamic_location.h"
#include "profile/zone.h"
#include "train/device_tensor.h"
#include "train/export_builder.h"
#include "train/layers/fake_quantize.h"
#include "train/split/slice_names.h"

namespace tandem::train {

ParameterList Module::parameters() {
  ParameterList r;
  for (Parameter& p : params_) r.push_back(&p);
  for (auto& c : children_) {
    ParameterList sub = c->parameters();
    r.insert(r.end(), sub.begin(), sub.end());
  }
  return r;
}

std::vector<Buffer*> Module::buffers() {
  std::vector<Buffer*> r;
  for (Buffer& b : buffers_) r.push_back(&b);
  for (auto& c : children_) {
    std::vector<Buffer*> sub = c->buffers();
    r.insert(r.end(), sub.begin(), sub.end());
  }
  return r;
}

namespace {

NamedTensors live_state(Module& m) {
  NamedTensors r;
  for (Parameter* p : m.parameters()) r.emplace_back(p->name, p->value);
  for (Buffer* b : m.buffers())
    if (b->persistent) r.emplace_back(b->name, b->value);
  return r;
}

}  // namespace

NamedTensors Module::state_dict() { return gather_slices(live_state(*this)); }

void Module::load_state_dict(const NamedTensors& tensors) {
  NamedTensors live = live_state(*this);
  copy_by_name(live, slice_like(live, tensors), "state_dict tensors", {});
}

Var Module::operator()(const Var& x) {
  return in_zone([&] {
    Var y = forward(x);
    return output_fake_quant_ ? output_fake_quant_->forward(y) : y;
  });
}

Var Module::in_zone(const std::function<Var()>& run) {
  if (prefix_.empty()) return run();  // the model itself: the loop's zones are its
  if (!forward_zone_) {
    const std::string name = prefix_.substr(0, prefix_.size() - 1);  // without the trailing '.'
    forward_zone_ = profile::dynamic_location("forward " + name, "layer");
    backward_zone_ = profile::dynamic_location("backward " + name, "layer");
  }
  TANDEM_ZONE_AT(forward_zone_);
  LayerZoneScope scope(backward_zone_);  // the ops it records run their backward in that zone
  return run();
}

ValueId Module::graph(ExportBuilder& g, ValueId x) const {
  ValueId y = to_graph(g, x);
  return output_fake_quant_ ? output_fake_quant_->to_graph(g, y) : y;
}

const FakeQuantize* Module::wire_input_grids(const FakeQuantize*) { return output_fake_quant_; }

void Module::quantize_output() {
  if (!output_fake_quant_) output_fake_quant_ = &add_module("activation_post_process", std::make_unique<FakeQuantize>());
}

ValueId Module::to_graph(ExportBuilder&, ValueId) const {
  throw Error::unsupported("a layer of this model has no ONNX export");
}

void Module::train(bool on) {
  training_ = on;
  for (auto& c : children_) c->train(on);
}

void Module::to(Device device) {
  for (Parameter& p : params_) {
    p.value = to_device(p.value, device);
    p.grad = to_device(p.grad, device);
  }
  for (Buffer& b : buffers_)
    if (is_floating(b.value.dtype()) && !b.host_only) b.value = to_device(b.value, device);
  for (auto& c : children_) c->to(device);
}

void Module::visit(const std::function<void(Module&)>& f) {
  f(*this);
  for (auto& c : children_) c->visit(f);
}

Parameter& Module::add_parameter(const std::string& name, Tensor value, bool decay) {
  Tensor grad = Tensor::zeros(value.dtype(), value.shape());
  params_.push_back(Parameter{name, std::move(value), std::move(grad), decay});
  return params_.back();
}

Buffer& Module::add_buffer(const std::string& name, Tensor value, bool persistent) {
  buffers_.push_back(Buffer{name, std::move(value), persistent});
  return buffers_.back();
}

void Module::adopt(const std::string& name, std::unique_ptr<Module> m) {
  m->prefix_names(prefix_ + name + ".");
  m->train(training_);
  children_.push_back(std::move(m));
}

void Module::prefix_names(const std::string& prefix) {
  prefix_ = prefix + prefix_;
  for (Parameter& p : params_) p.name = prefix + p.name;
  for (Buffer& b : buffers_) b.name = prefix + b.name;
  for (auto& c : children_) c->prefix_names(prefix);
}

}  // namespace tandem::train
