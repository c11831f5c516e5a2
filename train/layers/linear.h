#pragma once
#include "train/layers/init.h"
#include "train/layers/module.h"

namespace tandem::train {

// PyTorch's nn.Linear: weight [out, in], bias [out], both U(±1/sqrt(in)).
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, bool bias, Rng& rng);
  Var forward(const Var& x) override;
  ValueId to_graph(ExportBuilder& g, ValueId x) const override;

 private:
  Parameter* weight_;
  Parameter* bias_ = nullptr;
};

}  // namespace tandem::train
