#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "pipeline/sql.h"

namespace tandem::pipeline::sql {

void reconnect_after(Database& db, const Reconnect& policy, const Error& lost,
                     std::chrono::steady_clock::time_point since) {
  using clock = std::chrono::steady_clock;
  const auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - since).count(); };
  if (policy.note)
    policy.note(fmt::format("{}; reconnecting for up to {:.0f} s more", lost.what(),
                            std::max(0.0, policy.give_up_s - elapsed())));
  // Jitter keeps a hundred workers that lost one server together from
  // knocking on it in step when it comes back.
  thread_local std::minstd_rand jitter(std::random_device{}());
  std::string last = lost.message();
  for (double pause = 0.25;; pause = std::min(pause * 2, 8.0)) {
    const double left = policy.give_up_s - elapsed();
    if (left <= 0)
      throw Error::unavailable(
          fmt::format("the database was unreachable for {:.0f} s, giving up: {}", elapsed(), last),
          ErrorContext{db.name(), "", "", ""});
    const double wait =
        std::min(left, pause * std::uniform_real_distribution<double>(0.75, 1.25)(jitter));
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    try {
      db.reconnect();
      if (policy.note)
        policy.note(fmt::format("{}: reconnected after {:.1f} s", db.name(), elapsed()));
      return;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::unavailable) throw;
      last = e.message();
    }
  }
}

}  // namespace tandem::pipeline::sql
