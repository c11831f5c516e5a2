#pragma once
// How much of a split layer goes where. In the code r is the share of a
// layer's output channels on the home device (the GPU): r = 1 keeps the layer
// whole on the GPU (the CPU does nothing), r = 0 puts it all on the CPU. The
// user sees the CPU's share, 1 - r, as the users of a split think of it (`--split R`, the
// end-of-run table, the trace: "0 where the CPU cannot help"). The
// auto-tuner's decision is a pure function of measured times (choose_split),
// so it can be tested without devices.
#include <string>
#include <vector>

namespace tandem::train {

// `--split auto` or a fixed home share for every split layer.
struct SplitSetting {
  bool automatic = true;
  double ratio = 1;  // r, home's share
};
// "auto", or the CPU's share R in [0, 1] (ratio = 1 - R); an Error otherwise.
SplitSetting parse_split_setting(const std::string& text);

// The output channels on home for share r of `rows`, rounded to the nearest
// multiple of `step` (whole groups; step = rows allows only 0 or all).
int64_t home_rows_for(double r, int64_t rows, int64_t step);

// What the tuner measured of one layer, in seconds of forward + backward.
struct SplitMeasurement {
  // The home device computing share r of the channels, for a few r in (0, 1]
  // (1 among them: the whole layer on home). Below the smallest r measured,
  // home's time is taken as that r's (a GPU's small slice is not free).
  std::vector<std::pair<double, double>> home;
  double host_all = 0;     // the CPU computing all channels
  double copy_fixed = 0;   // copies whatever r < 1: x to the host, the partial dx back
  double copy_all = 0;     // copies that scale with the CPU's share: its y and dy, at share 1
};

struct SplitChoice {
  double r = 1;
  int64_t home_rows = 0;
  double t_home = 0, t_host = 0;  // predicted for each side at r
  double t_split = 0;             // predicted: the slower side
  double t_single = 0;            // the best of r = 1 and r = 0
};

// Home's predicted time at share r (0 at r = 0), interpolated linearly.
double predicted_home(const SplitMeasurement& m, double r);
// The CPU side's: (1 - r) (host_all + copy_all) + copy_fixed; 0 at r = 1.
double predicted_host(const SplitMeasurement& m, double r);

// The r on the grid of whole `step`s of `rows` minimizing the slower side's
// predicted time; r = 1 unless that beats keeping the layer on home by more
// than `min_gain` (a fraction), so a split is never chosen for noise.
SplitChoice choose_split(const SplitMeasurement& m, int64_t rows, int64_t step, double min_gain = 0.03);

}  // namespace tandem::train
