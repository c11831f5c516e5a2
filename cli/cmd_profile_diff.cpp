// `tandem profile-diff A B`: two --profile runs compared stage by stage
// (A, B: profile folders or their summary.json files).
#include <fmt/core.h>

#include "cli/commands.h"
#include "profile/summary_io.h"

namespace tandem::cli {

namespace {

struct ProfileDiffOptions {
  std::string a, b;
  size_t top = 40;
};

int profile_diff_command(const ProfileDiffOptions& o) {
  const profile::ProfileSummary a = profile::read_summary(o.a);
  const profile::ProfileSummary b = profile::read_summary(o.b);
  fmt::print("A: {}\nB: {}\n{}", o.a, o.b, profile::format_diff(a, b, o.top));
  return 0;
}

}  // namespace

void add_profile_diff_command(CLI::App& app) {
  auto o = std::make_shared<ProfileDiffOptions>();
  CLI::App* sub = app.add_subcommand("profile-diff", "Compare two --profile runs stage by stage");
  sub->add_option("a", o->a, "The first run: a --profile folder or its summary.json")->required();
  sub->add_option("b", o->b, "The second run")->required();
  sub->add_option("--top", o->top, "Stages shown, largest change of total time first")->check(CLI::PositiveNumber);
  on_run(sub, [o] { return profile_diff_command(*o); });
}

}  // namespace tandem::cli
