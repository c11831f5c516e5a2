#include "train/export.h"

#include "formats/onnx/onnx_exporter.h"
#include "train/device_tensor.h"
#include "train/export_builder.h"

namespace tandem::train {

namespace {

// Where the model takes its input: the GPU a model trained on one (or
// split with one) keeps its parameters on, else the host.
Device input_device(Module& model) {
  for (Parameter* p : model.parameters())
    if (!p->value.device().is_cpu()) return p->value.device();
  return Device::cpu();
}

// The shape of the model's eval-mode output for one sample.
Shape output_shape(Module& model, const Shape& sample) {
  const bool was_training = model.training();
  model.eval();
  Shape batch{1};
  batch.insert(batch.end(), sample.begin(), sample.end());
  Shape out;
  try {
    NoGradGuard no_grad;
    out = model(Var(to_device(Tensor::zeros(DType::f32, batch), input_device(model)))).shape();
  } catch (...) {
    model.train(was_training);
    throw;
  }
  model.train(was_training);
  return out;
}

}  // namespace

Graph model_to_graph(Module& model, const Shape& sample, const ExportOptions& options) {
  check(sample.size() == 3, "export: the sample shape must be [C, H, W], got " + shape_str(sample));
  Shape out = output_shape(model, sample);
  Graph g;
  g.opset = options.opset;
  Value in;
  in.name = options.input_name;
  in.shape = {-1, sample[0], sample[1], sample[2]};
  in.dim_names = {"batch", "", "", ""};
  g.inputs.push_back(g.add_value(std::move(in)));
  ExportBuilder b(g);
  ValueId y = model.to_graph(b, g.inputs[0]);
  if (y == g.inputs[0]) y = b.node("Identity", {y});
  Value& logits = g.value(y);
  check(!logits.is_constant(), "export: the model's output does not depend on its input");
  logits.name = options.output_name;
  logits.shape = out;
  logits.shape[0] = -1;
  logits.dim_names.assign(out.size(), "");
  logits.dim_names[0] = "batch";
  g.outputs.push_back(y);
  return g;
}

void export_onnx(Module& model, const Shape& sample, const std::string& path, const ExportOptions& options) {
  OnnxExportOptions o;
  o.doc_string = "trained by tandem train";
  save_onnx(model_to_graph(model, sample, options), path, o);
}

}  // namespace tandem::train
