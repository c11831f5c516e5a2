#pragma once
// Every subcommand: add_X(app) declares its options; the selected one runs.
#include <CLI/CLI.hpp>
#include <functional>

namespace tandem::cli {

// A subcommand's body, run after parsing; returns the process exit code.
using CommandFn = std::function<int()>;
// Registers the body of subcommand `sub` (called by each add_* function).
void on_run(CLI::App* sub, CommandFn fn);

void add_all_commands(CLI::App& app);
int run_selected(CLI::App& app);

}  // namespace tandem::cli
