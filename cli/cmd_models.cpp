// `tandem models`: what scripts/setup installed, where, and what each does.
#include <fmt/core.h>

#include "cli/commands.h"
#include "pipeline/model_store.h"

namespace tandem::cli {

namespace {

int models_command() {
  std::vector<pipeline::InstalledModel> models = pipeline::installed_models();
  fmt::print("models in {}{}\n", pipeline::models_dir(),
             models.empty() ? ": none (scripts/setup or scripts/install-models installs them)" : "");
  for (const auto& m : models)
    fmt::print("  {:<12} {:>7.1f} MB  {}{}\n", m.name, double(m.bytes) / 1e6, m.task.empty() ? "-" : m.task,
               m.name == pipeline::kDefaultModel ? "  [default]" : "");
  return models.empty() ? 1 : 0;
}

}  // namespace

void add_models_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("models", "List the installed models ($TANDEM_MODELS)");
  on_run(sub, [] { return models_command(); });
}

}  // namespace tandem::cli
