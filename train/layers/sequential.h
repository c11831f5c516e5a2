#pragma once
#include <memory>
#include <utility>

#include "train/layers/module.h"

namespace tandem::train {

// nn.Sequential: children run in order, named "0", "1", ... or as given
// (a model whose state_dict keys are "conv1", "layer1", "fc").
class Sequential : public Module {
 public:
  template <typename M>
  M& add(std::unique_ptr<M> m) {
    M& r = add_module(std::to_string(layers_.size()), std::move(m));
    layers_.push_back(&r);
    return r;
  }
  template <typename M>
  M& add(const std::string& name, std::unique_ptr<M> m) {
    M& r = add_module(name, std::move(m));
    layers_.push_back(&r);
    return r;
  }
  template <typename M, typename... Args>
  M& emplace(Args&&... args) {
    return add(std::make_unique<M>(std::forward<Args>(args)...));
  }
  // Puts `m` before the first layer (a model's input quantizer).
  template <typename M>
  M& add_front(const std::string& name, std::unique_ptr<M> m) {
    M& r = add_module(name, std::move(m));
    layers_.insert(layers_.begin(), &r);
    return r;
  }
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;
  // Each layer's input grid is the one before it left.
  const FakeQuantize* wire_input_grids(const FakeQuantize* in) override;
  size_t size() const { return layers_.size(); }
  Module& layer(size_t i) const { return *layers_.at(i); }

 private:
  std::vector<Module*> layers_;
};

}  // namespace tandem::train
