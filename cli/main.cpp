// tandem: command-line entry. Each subcommand lives in its own cmd_*.cpp and
// registers itself in cli/commands.h; errors end as one line on stderr.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"
#include "core/error.h"
#include "profile/zone.h"

int main(int argc, char** argv) {
  TANDEM_THREAD_NAME("main");
  CLI::App app{"tandem: CPU and GPU in tandem on convolutional networks"};
  app.set_version_flag("--version", "tandem 0.1.0");
  app.require_subcommand(1);
  tandem::cli::add_all_commands(app);
  try {
    app.parse(argc, argv);
    return tandem::cli::run_selected(app);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const tandem::Error& e) {
    std::fprintf(stderr, "tandem: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem: %s\n", e.what());
    return 1;
  }
}
