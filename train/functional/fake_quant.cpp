// Fake quantization and its straight-through backward.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct FakeQuantFn : GradFn {
  explicit FakeQuantFn(Tensor m) : mask(std::move(m)) {}
  const char* name() const override { return "fake_quantize"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->fake_quant_backward(backend->ctx, mask, dy, d[0]);
  }
  Tensor mask;
};

}  // namespace

Var fake_quantize(const Var& x_in, const Tensor& scale, const Tensor& zero_point,
                  const ops::FakeQuantParams& p) {
  const TrainBackend& be = train_backend("fake_quantize", {&x_in});
  const Var x = to_f32(x_in);
  TANDEM_CHECK_SUPPORTED(be.fake_quant_forward != nullptr,
                         std::string("fake quantization is not on ") + be.name + " yet");
  Tensor y = empty_like(be, x, x.shape()), mask;  // x's layout (channels-last on a GPU)
  be.fake_quant_forward(be.ctx, p, x.value(), scale, zero_point, y, &mask);
  return record<FakeQuantFn>(std::move(y), be, {x}, std::move(mask));
}

}  // namespace tandem::train
