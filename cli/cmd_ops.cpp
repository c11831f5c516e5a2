// `tandem ops`: the ops tandem understands and the backends that run them;
// `tandem ops MODEL --device D`: the model's ops and where each would run.
#include <fmt/core.h>

#include <map>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/backend.h"
#include "cpu/cpu_backend.h"
#include "cpu/registry.h"
#include "ops/schema.h"
#include "pipeline/model_store.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/registry.h"
#endif

namespace tandem::cli {

namespace {

bool cuda_has(const std::string& op) {
#ifdef TANDEM_HAVE_CUDA
  return cuda::find_kernel(op) != nullptr;
#else
  (void)op;
  return false;
#endif
}

bool device_has(const Device& d, const std::string& op) {
  return d.is_cpu() ? cpu::find_kernel(op) != nullptr : cuda_has(op);
}

void list_all_ops() {
  fmt::print("cpu: {}\n", cpu::instruction_set());
  fmt::print("{:<28} {:<4} {}\n", "op", "cpu", "cuda");
  for (const std::string& op : ops::registered_ops())
    fmt::print("{:<28} {:<4} {}\n", op, cpu::find_kernel(op) ? "cpu" : "-", cuda_has(op) ? "cuda" : "-");
}

// Per op type of the model: nodes, and where they run on `device` (the CPU
// when the device has no kernel). Kernels that refuse a node's dtype or
// attributes at compile time show in the run's own fallback line.
int list_model_ops(const std::string& model, const Device& device) {
  Graph g = load_model(pipeline::resolve_model(model));
  std::map<std::string, int> count;
  for (const Node& n : g.nodes)
    if (!n.dead) ++count[n.op_type];
  int nodes = 0, fallback = 0, missing = 0;
  fmt::print("{:<28} {:>5}  runs on {}\n", "op", "nodes", device.str());
  for (const auto& [op, n] : count) {
    bool on_device = device_has(device, op), on_cpu = cpu::find_kernel(op) != nullptr;
    std::string where = on_device ? device.str() : on_cpu ? "cpu (fallback)" : "NO KERNEL";
    nodes += n;
    fallback += !on_device && on_cpu ? n : 0;
    missing += !on_device && !on_cpu ? n : 0;
    fmt::print("{:<28} {:>5}  {}\n", op, n, where);
  }
  fmt::print("{} nodes; {} fall back to the CPU; {} have no kernel\n", nodes, fallback, missing);
  return missing ? 1 : 0;
}

}  // namespace

void add_ops_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("ops", "List supported ops and their backends, or a model's ops and where they run");
  auto model = std::make_shared<std::string>();
  auto device = std::make_shared<std::string>("auto");
  sub->add_option("model", *model, "A model (path or installed name) whose ops to place");
  sub->add_option("--device", *device, "cpu, cuda[:N] or auto: where the model's ops should run");
  on_run(sub, [model, device] {
    if (model->empty()) {
      list_all_ops();
      return 0;
    }
    CommonOptions where;
    where.device = *device;
    Device d = resolve_device(where);
    return list_model_ops(*model, d);
  });
}

}  // namespace tandem::cli
