#pragma once
// Optimizer base: owns per-parameter state tensors ("slots": a momentum
// buffer, Adam's moments), counts steps, and exports / imports that state for
// checkpoints. Subclasses supply the slot names and the per-parameter update.
// Parameters are fp32, on the host or a GPU (value, gradient and state on one
// device; checked at construction, with the name); a GPU's are updated there.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "train/named_tensors.h"
#include "train/parameter.h"

namespace tandem::train {

// What a checkpoint stores of an optimizer: its kind ("sgd", "adamw"), how
// many steps it took, and every slot as "<parameter name>.<slot name>".
struct OptimizerState {
  std::string kind;
  int64_t steps = 0;
  NamedTensors slots;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter from its gradient at the current lr.
  void step();
  // Sets every gradient to zero (backward then accumulates into it).
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  int64_t steps() const { return steps_; }
  const ParameterList& parameters() const { return params_; }
  virtual std::string kind() const = 0;

  // Shallow copies: the tensors share storage with the live state.
  OptimizerState state() const;
  // Copies `state` in after checking its kind, every slot's name and shape;
  // all mismatches are listed in one Error (context: `ctx`, e.g. the file).
  // Nothing changes unless everything matches.
  void load_state(const OptimizerState& state, const ErrorContext& ctx = {});
  // The checks load_state makes, without loading.
  void check_state(const OptimizerState& state, const ErrorContext& ctx = {}) const;

 protected:
  Optimizer(ParameterList params, double lr, std::vector<std::string> slot_names);
  // Updates parameter i; slots(i) holds its state tensors in slot_names order.
  virtual void update(size_t i, Parameter& p) = 0;
  // After every parameter's update(), before the step count moves on: for
  // updates update() only queued (GPU parameters, updated a group at a time).
  virtual void finish_step() {}
  std::vector<Tensor>& slots(size_t i) { return slots_[i]; }

 private:
  ParameterList params_;
  double lr_;
  int64_t steps_ = 0;
  std::vector<std::string> slot_names_;
  std::vector<std::vector<Tensor>> slots_;  // [parameter][slot], zeros at start
};

// Throws Error naming the parameter unless value and grad are plain f32
// tensors of one shape on one device.
void check_parameter(const Parameter& p);

}  // namespace tandem::train
