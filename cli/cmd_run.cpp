// `tandem run MODEL --input NAME=FILE ... --save-outputs DIR`: one inference
// on tensors from files (.pb TensorProto or .npy), outputs saved as files.
#include <fmt/core.h>

#include <filesystem>
#include <map>

#include "cli/commands.h"
#include "cli/common.h"
#include "pipeline/model_store.h"
#include "formats/tensor_file.h"
#include "profile/session.h"

namespace tandem::cli {

namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE
  std::string save_dir;
  std::string format = "npy";
  std::vector<std::string> outputs;  // TF.js: tensors to output instead of the signature's
  CommonOptions common;
};

std::map<std::string, Tensor> read_inputs(const std::vector<std::string>& specs, const Session& s) {
  std::map<std::string, Tensor> named;
  std::vector<std::string> names = s.input_names();
  for (const std::string& spec : specs) {
    auto eq = spec.find('=');
    std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    std::string file = eq == std::string::npos ? spec : spec.substr(eq + 1);
    if (name.empty()) {
      // A bare FILE feeds the inputs in order.
      check(named.size() < names.size(), "more input files than model inputs");
      name = names[named.size()];
    }
    named[name] = read_tensor_file(file);
  }
  return named;
}

int run_command(RunOptions& o) {
  o.model = pipeline::resolve_model(o.model.empty() ? pipeline::kDefaultModel : o.model);
  profile::TraceSession trace(session_outputs(o.common));
  ModelLoadOptions load;
  load.tfjs.outputs = o.outputs;
  Session s = open_model(o.model, o.common, load);
  std::vector<Tensor> outs = s.run(read_inputs(o.inputs, s));
  std::vector<std::string> names = s.output_names();
  if (!o.save_dir.empty()) std::filesystem::create_directories(o.save_dir);
  for (size_t i = 0; i < outs.size(); ++i) {
    fmt::print("{}: {}\n", names[i], outs[i].desc().str());
    if (o.save_dir.empty()) continue;
    std::string path = o.save_dir + "/" + sanitize_name(names[i]) + "." + o.format;
    write_tensor_file(path, outs[i], names[i]);
  }
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Run a model once on tensors read from files");
  sub->add_option("model", o->model,
                  "Model: .onnx, TF.js model.json, or an installed model's name (default: the shipped detector)");
  sub->add_option("--input,-i", o->inputs, "NAME=FILE (.pb or .npy); repeat per input");
  sub->add_option("--save-outputs", o->save_dir, "Folder to write every output into");
  sub->add_option("--outputs", o->outputs, "TF.js models: tensor names to output (node or node:k)")->delimiter(',');
  sub->add_option("--format", o->format, "Output file format: npy or pb")->check(CLI::IsMember({"npy", "pb"}));
  add_common_options(sub, o->common);
  on_run(sub, [o] { return run_command(*o); });
}

}  // namespace tandem::cli
