#pragma once
// Layers as modules, PyTorch style: a Module owns its Parameters and buffers
// (running statistics), named like PyTorch's state_dict keys, and its child
// modules; the name of a child's tensors gets the child's name as a prefix
// ("layer1.0.conv1.weight") when it is added. parameters() and buffers()
// list them in PyTorch's order: a module's own, then each child's.
// to_graph() writes the layer's eval-mode forward as ONNX-domain nodes of a
// Graph (train/export.h), naming initializers by the same keys.
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "train/autograd.h"
#include "train/named_tensors.h"
#include "train/parameter.h"

namespace tandem::train {

class ExportBuilder;
class FakeQuantize;

// A tensor a module keeps and checkpoints but does not train. Persistent
// ones are in the state_dict (running statistics); others are run state a
// checkpoint keeps but PyTorch's twin has no key for (a dropout call count).
struct Buffer {
  std::string name;
  Tensor value;
  bool persistent = true;
  // Stays on the host when the module moves (Module::to): state the host
  // updates in place, a fake quantizer's observed range.
  bool host_only = false;
};

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  virtual Var forward(const Var& x) = 0;
  // forward(x), then the output's fake quantizer if quantize_output() added
  // one: what a container calls on its children.
  Var operator()(const Var& x);
  // The eval-mode forward of x as graph nodes; returns the output value.
  // Throws Error::unsupported for a layer without an ONNX form.
  virtual ValueId to_graph(ExportBuilder& g, ValueId x) const;
  // to_graph(g, x), then the output's QuantizeLinear/DequantizeLinear pair
  // if quantize_output() added a fake quantizer (as operator() runs it).
  ValueId graph(ExportBuilder& g, ValueId x) const;
  // Quantization-aware training: from now on the output passes through a
  // per-tensor uint8 fake quantizer, the child "activation_post_process"
  // (where PyTorch's eager prepare_qat puts a module's output observer).
  void quantize_output();
  bool quantizes_output() const { return output_fake_quant_ != nullptr; }
  // Quantization-aware training: tells each Conv2d and Linear below which
  // fake quantizer put its input on an integer grid (`in`: the one of this
  // module's input, null when none is known), so that a layer split between
  // devices can run its host side on integers; returns the one of this
  // module's output. Here: the output's own quantizer, or none known.
  virtual const FakeQuantize* wire_input_grids(const FakeQuantize* in);

  ParameterList parameters();
  // Every buffer, persistent or not (what a checkpoint keeps).
  std::vector<Buffer*> buffers();
  // PyTorch's state_dict(): parameters and persistent buffers by name,
  // sharing storage with the module; a layer split between devices
  // (train/split) contributes its whole weight and bias, gathered into host
  // copies, under their plain names.
  NamedTensors state_dict();
  // Copies `tensors` (a state_dict: every name and shape, or an Error listing
  // the differences) into the parameters and buffers, cutting whole tensors
  // into a split layer's slices.
  void load_state_dict(const NamedTensors& tensors);
  // Training mode (batch statistics, dropout) or eval mode, for the whole tree.
  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }
  // Moves every parameter (value and gradient) and every floating-point
  // buffer of the tree to `device`; integer buffers (num_batches_tracked)
  // stay on the host, where the layers count in them. ParameterList
  // pointers stay valid; make the optimizer after the move (its state lives
  // where the parameters were when it was made).
  void to(Device device);
  // Calls f on this module, then on every module below it (pre-order).
  void visit(const std::function<void(Module&)>& f);

 protected:
  const FakeQuantize* output_quantizer() const { return output_fake_quant_; }
  // body() inside this layer's profiler zones (as operator() runs
  // forward): for a layer's other entry points.
  Var in_zone(const std::function<Var()>& body);
  // A new parameter with gradient zeros; `decay`: weight decay applies.
  Parameter& add_parameter(const std::string& name, Tensor value, bool decay);
  Buffer& add_buffer(const std::string& name, Tensor value, bool persistent = true);
  // The module's own parameters, for a layer that re-cuts them between
  // devices (train/split/channel_split.h).
  std::deque<Parameter>& own_parameters() { return params_; }
  template <typename M>
  M& add_module(const std::string& name, std::unique_ptr<M> m) {
    M& r = *m;
    adopt(name, std::move(m));
    return r;
  }

 private:
  void adopt(const std::string& name, std::unique_ptr<Module> m);
  void prefix_names(const std::string& prefix);

  std::deque<Parameter> params_;  // deques: stable addresses for ParameterList
  std::deque<Buffer> buffers_;
  std::vector<std::unique_ptr<Module>> children_;
  // What the names of this module's tensors start with ("layer1.0.conv1."),
  // so a child added after this module was adopted is named in full.
  std::string prefix_;
  // "forward <name>" and "backward <name>" (profile/dynamic_location.h), made
  // at the first forward: --profile shows the step per layer.
  const profile::SourceLocation* forward_zone_ = nullptr;
  const profile::SourceLocation* backward_zone_ = nullptr;
  FakeQuantize* output_fake_quant_ = nullptr;
  bool training_ = true;
};

}  // namespace tandem::train
