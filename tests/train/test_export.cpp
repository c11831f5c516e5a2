// A trained model exported to ONNX (train/export.h) for every architecture
// of train/models: python3-onnx's checker accepts the file (full check), and
// the logits of the model in eval mode, of tandem's Session on the file and
// of the PyTorch twin (tests/train/torch_models.py) holding the file's
// weights agree within 1e-5 of the largest logit (plus 1e-5 relative).
// Running statistics and BN affine parameters are moved off their initial
// values first, so eval-mode batch norm is really exercised.
#include <gtest/gtest.h>
#include <set>

#include "formats/onnx/onnx_importer.h"
#include "graph/session.h"
#include "tests/numpy_ref.h"
#include "tests/train/grad_check.h"
#include "train/export.h"
#include "train/models/models.h"

using namespace tandem;
using namespace tandem::testing;
using namespace tandem::train;

namespace {

struct Case {
  std::string arch;
  ModelConfig config;
  int64_t batch;
};

std::vector<Case> cases() {
  return {{"cnn", {1, 28, 28, 10, 0.5f}, 4},
          {"lenet5", {1, 28, 28, 10, 0.5f}, 4},
          {"resnet20", {1, 28, 28, 10, 0.5f}, 3},
          {"resnet18", {3, 32, 32, 7, 0.5f}, 2},
          {"convnext", {1, 28, 28, 10, 0.5f}, 3}};
}

// Moves every vector parameter (biases, layer norms, layer scales) by
// U(-0.5, 0.5), so the layer norms' affine parts and the ConvNeXt blocks
// (whose layer scales start at 1e-6) change the logits.
void perturb_vectors(Module& m) {
  Rng rng(6);
  for (Parameter* p : m.parameters()) {
    if (p->value.rank() != 1) continue;
    Tensor shift = Tensor::empty(DType::f32, p->value.shape());
    uniform_fill(shift, -0.5, 0.5, rng);
    for (int64_t i = 0; i < shift.numel(); ++i) p->value.data<float>()[i] += shift.data<float>()[i];
  }
}

// Moves BN weights, biases and running statistics away from 1, 0, 0, 1.
void perturb_batch_norms(Module& m, const ModelConfig& c) {
  std::set<std::string> bn;  // "layer1.0.bn1." for each batch norm
  for (Buffer* b : m.buffers())
    if (b->name.ends_with("running_mean")) bn.insert(b->name.substr(0, b->name.size() - 12));
  Rng rng(5);
  for (Parameter* p : m.parameters()) {
    std::string prefix = p->name.substr(0, p->name.rfind('.') + 1);
    if (!bn.count(prefix)) continue;
    bool weight = p->name.ends_with("weight");
    uniform_fill(p->value, weight ? 0.5 : -0.5, weight ? 1.5 : 0.5, rng);
  }
  NoGradGuard no_grad;
  m.train();
  for (uint64_t i = 0; i < 3; ++i) m(Var(random_tensor({8, c.channels, c.height, c.width}, 40 + i, -2, 2)));
  m.eval();
}

std::string spec(const std::string& name, const Case& c) {
  const ModelConfig& m = c.config;
  return name + ":" + c.arch + ":" + std::to_string(m.channels) + ":" + std::to_string(m.height) + ":" +
         std::to_string(m.width) + ":" + std::to_string(m.classes);
}

}  // namespace

TEST(Export, SessionAndPyTorchGiveTheTrainersEvalLogits) {
  std::string dir = make_temp_dir(), specs;
  std::vector<Tensor> want;
  const std::vector<Case> all = cases();
  for (const Case& c : all) {
    SCOPED_TRACE(c.arch);
    Rng rng(11);
    auto model = make_model(c.arch, c.config, rng);
    perturb_batch_norms(*model, c.config);
    if (c.arch == "convnext") perturb_vectors(*model);
    Tensor x = random_tensor({c.batch, c.config.channels, c.config.height, c.config.width}, 77, -2, 2);
    Tensor logits = (*model)(Var(x)).value();
    ASSERT_EQ(logits.shape(), (Shape{c.batch, c.config.classes}));
    want.push_back(logits);
    export_onnx(*model, {c.config.channels, c.config.height, c.config.width}, dir + "/" + c.arch + ".onnx");
    write_npy(dir + "/" + c.arch + ".x.npy", x);
    specs += " " + spec(c.arch, c);

    Session s(load_onnx(dir + "/" + c.arch + ".onnx"));
    ASSERT_EQ(s.input_names(), std::vector<std::string>{"input"});
    ASSERT_EQ(s.output_names(), std::vector<std::string>{"logits"});
    expect_near_scaled(s.run({x})[0], to_doubles(logits), 1e-5, 1e-5, c.arch + " session");
  }
  if (!have_reference_python() || !run_reference_script("train/export_torch.py", dir + specs))
    GTEST_SKIP() << "torch or onnx missing";
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string& arch = all[i].arch;
    Tensor torch_logits = read_npy(dir + "/" + arch + ".torch.npy", DType::f32);
    expect_near_scaled(torch_logits, to_doubles(want[i]), 1e-5, 1e-5, arch + " PyTorch");
  }
  (void)std::system(("rm -rf " + dir).c_str());
}

TEST(Export, BatchIsDynamic) {
  Rng rng(3);
  auto model = make_model("cnn", ModelConfig{}, rng);
  model->eval();
  Session s(model_to_graph(*model, {1, 28, 28}));
  for (int64_t n : {1, 5}) {
    Tensor x = random_tensor({n, 1, 28, 28}, uint64_t(n));
    Tensor y = s.run({x})[0];
    ASSERT_EQ(y.shape(), (Shape{n, 10}));
    expect_near_scaled(y, to_doubles((*model)(Var(x)).value()), 1e-5, 1e-5, "batch " + std::to_string(n));
  }
}

TEST(Export, TrainingModeIsKeptAndDropoutIsGone) {
  Rng rng(3);
  auto model = make_model("cnn", ModelConfig{}, rng);
  Graph g = model_to_graph(*model, {1, 28, 28});
  EXPECT_TRUE(model->training());
  for (const tandem::Node& n : g.nodes) EXPECT_NE(n.op_type, "Dropout");
}

TEST(Export, AWrongSampleShapeIsAnError) {
  Rng rng(3);
  auto model = make_model("cnn", ModelConfig{}, rng);
  EXPECT_THROW(model_to_graph(*model, {28, 28}), Error);
  EXPECT_THROW(model_to_graph(*model, {3, 28, 28}), Error);  // the first conv wants 1 channel
}
