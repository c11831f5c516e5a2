#pragma once
// Layers as modules, PyTorch style: a Module owns its Parameters and buffers
// (running statistics), named like PyTorch's state_dict keys, and its child
// modules; the name of a child's tensors gets the child's name as a prefix
// ("layer1.0.conv1.weight") when it is added. parameters() and buffers()
// list them in PyTorch's order: a module's own, then each child's.
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "train/autograd.h"
#include "train/parameter.h"

namespace tandem::train {

// A tensor a module keeps and checkpoints but does not train.
struct Buffer {
  std::string name;
  Tensor value;
};

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  virtual Var forward(const Var& x) = 0;
  Var operator()(const Var& x) { return forward(x); }

  ParameterList parameters();
  std::vector<Buffer*> buffers();
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

 protected:
  // A new parameter with gradient zeros; `decay`: weight decay applies.
  Parameter& add_parameter(const std::string& name, Tensor value, bool decay);
  Buffer& add_buffer(const std::string& name, Tensor value);
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
  bool training_ = true;
};

}  // namespace tandem::train
