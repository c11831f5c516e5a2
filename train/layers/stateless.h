#pragma once
// Layers without parameters: activations, pooling, flatten, dropout.
#include "ops/train_backend.h"
#include "train/layers/init.h"
#include "train/export_builder.h"
#include "train/functional.h"
#include "train/layers/module.h"

namespace tandem::train {

inline bool keeps_grid(const ops::Activation& a) { return a.kind == ops::ActivationKind::relu; }
inline bool keeps_grid(const ops::Pool2dParams& p) { return p.kind == ops::PoolKind::max; }

// A layer that is one functional op with fixed parameters.
template <typename Params, Var (*Op)(const Var&, const Params&)>
class FunctionLayer : public Module {
 public:
  explicit FunctionLayer(Params p) : params_(p) {}
  Var forward(const Var& x) override { return Op(x, params_); }
  // ReLU and max pooling keep their input's integer grid (each output is an
  // input value or zero, which the grid holds); the others leave it.
  const FakeQuantize* wire_input_grids(const FakeQuantize* in) override {
    if (output_quantizer()) return output_quantizer();
    return keeps_grid(params_) ? in : nullptr;
  }
  ValueId to_graph(ExportBuilder& g, ValueId x) const override { return export_op(g, x, params_); }
  const Params& params() const { return params_; }

 private:
  Params params_;
};

// nn.ReLU, nn.LeakyReLU, nn.SiLU, nn.Hardswish, nn.Sigmoid, nn.Tanh.
using Activation = FunctionLayer<ops::Activation, activation>;
// nn.MaxPool2d / nn.AvgPool2d (max_pool_params / avg_pool_params build p).
using Pool2d = FunctionLayer<ops::Pool2dParams, pool2d>;

// nn.AdaptiveAvgPool2d(1): [N, C, H, W] -> [N, C, 1, 1].
class GlobalAvgPool2d : public Module {
 public:
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;
};

// nn.Flatten: [N, ...] -> [N, prod(...)] from start_dim on.
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1) : start_dim_(start_dim) {}
  Var forward(const Var& x) override;
  const FakeQuantize* wire_input_grids(const FakeQuantize* in) override {
    return output_quantizer() ? output_quantizer() : in;
  }
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;

 private:
  int64_t start_dim_;
};

// nn.Dropout: each training call draws a new mask, from a seed taken from
// `rng` at construction and the call count, so a run is reproducible. Both
// are a non-persistent buffer ("rng", i64 [seed bits, calls]): a checkpoint
// keeps them, so a resumed run draws the masks an uninterrupted one would.
class Dropout : public Module {
 public:
  Dropout(float p, Rng& rng);
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder&, ValueId x) const override { return x; }  // identity in eval mode

 private:
  float p_;
  Buffer* rng_;
};

}  // namespace tandem::train
