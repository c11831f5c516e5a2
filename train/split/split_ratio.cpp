#include "train/split/split_ratio.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace tandem::train {

SplitSetting parse_split_setting(const std::string& text) {
  if (text == "auto") return {true, 1};
  char* end = nullptr;
  double r = std::strtod(text.c_str(), &end);
  check(!text.empty() && end && *end == '\0' && std::isfinite(r) && r >= 0 && r <= 1,
        "--split wants auto or the share of each layer's channels on the CPU, in [0, 1], got '" + text + "'");
  return {false, 1 - r};
}

int64_t home_rows_for(double r, int64_t rows, int64_t step) {
  check(rows > 0 && step > 0 && rows % step == 0 && r >= 0 && r <= 1,
        "split of " + std::to_string(rows) + " channels in steps of " + std::to_string(step) + " at r = " +
            std::to_string(r));
  return std::llround(r * double(rows / step)) * step;
}

double predicted_home(const SplitMeasurement& m, double r) {
  if (r <= 0) return 0;
  std::vector<std::pair<double, double>> pts = m.home;
  check(!pts.empty(), "split tuning without a measurement of the home device");
  std::sort(pts.begin(), pts.end());
  if (r <= pts.front().first) return pts.front().second;
  for (size_t i = 1; i < pts.size(); ++i) {
    const auto& [r0, t0] = pts[i - 1];
    const auto& [r1, t1] = pts[i];
    if (r <= r1) return t0 + (t1 - t0) * (r - r0) / (r1 - r0);
  }
  // Past the largest r measured: in proportion to it.
  return pts.back().second * r / pts.back().first;
}

double predicted_host(const SplitMeasurement& m, double r) {
  if (r >= 1) return 0;
  return (1 - r) * (m.host_all + m.copy_all) + m.copy_fixed;
}

SplitChoice choose_split(const SplitMeasurement& m, int64_t rows, int64_t step, double min_gain) {
  auto at = [&](int64_t home_rows) {
    SplitChoice c;
    c.home_rows = home_rows;
    c.r = double(home_rows) / double(rows);
    c.t_home = predicted_home(m, c.r);
    c.t_host = predicted_host(m, c.r);
    c.t_split = std::max(c.t_home, c.t_host);
    return c;
  };
  SplitChoice all_home = at(rows), best = all_home;
  for (int64_t k = 0; k < rows; k += step) {
    SplitChoice c = at(k);
    if (c.t_split < best.t_split) best = c;
  }
  double single = std::min(all_home.t_split, at(0).t_split);
  all_home.t_single = best.t_single = single;
  return best.t_split < (1 - min_gain) * all_home.t_split ? best : all_home;
}

}  // namespace tandem::train
