#include "cli/commands.h"

#include <map>
#include <optional>

namespace tandem::cli {

namespace {
std::map<CLI::App*, CommandFn>& bodies() {
  static std::map<CLI::App*, CommandFn> b;
  return b;
}
}  // namespace

void on_run(CLI::App* sub, CommandFn fn) { bodies()[sub] = std::move(fn); }

namespace {

// The innermost chosen command with a body runs: `tandem catalog copy`
// runs copy's; `tandem people CAT name 1 Alice` runs people's, which reads
// its action itself.
std::optional<int> run_innermost(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands()) {
    if (std::optional<int> r = run_innermost(*sub)) return r;
    if (auto it = bodies().find(sub); it != bodies().end()) return it->second();
  }
  return std::nullopt;
}

}  // namespace

int run_selected(CLI::App& app) { return run_innermost(app).value_or(2); }

// Each cmd_*.cpp defines one of these.
void add_ops_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_classify_command(CLI::App& app);
void add_detect_command(CLI::App& app);
void add_faces_command(CLI::App& app);
void add_people_command(CLI::App& app);
void add_models_command(CLI::App& app);
void add_tag_command(CLI::App& app);
void add_profile_diff_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_gallery_command(CLI::App& app);
void add_catalog_command(CLI::App& app);
void add_status_command(CLI::App& app);

void add_all_commands(CLI::App& app) {
  add_run_command(app);
  add_bench_command(app);
  add_classify_command(app);
  add_detect_command(app);
  add_faces_command(app);
  add_people_command(app);
  add_tag_command(app);
  add_train_command(app);
  add_serve_command(app);
  add_gallery_command(app);
  add_catalog_command(app);
  add_status_command(app);
  add_models_command(app);
  add_ops_command(app);
  add_quantize_command(app);
  add_profile_diff_command(app);
}

}  // namespace tandem::cli
