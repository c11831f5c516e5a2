// `tandem ops`: lists the ops tandem understands and which backends run them.
#include <fmt/core.h>

#include "cli/commands.h"
#include "core/backend.h"
#include "cpu/cpu_backend.h"
#include "ops/schema.h"

namespace tandem::cli {

void add_ops_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("ops", "List supported ops and their backends");
  on_run(sub, [] {
    for (const std::string& op : ops::registered_ops()) {
      OpDesc d;
      d.op_type = op;
      fmt::print("{:<28} {}\n", op, cpu::cpu_backend().supports(d) ? "cpu" : "-");
    }
    return 0;
  });
}

}  // namespace tandem::cli
