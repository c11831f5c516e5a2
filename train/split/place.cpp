#include "train/split/place.h"

#include <fmt/core.h>

#include "train/device_tensor.h"
#include "train/layers/channel_layer.h"

namespace tandem::train {

namespace {

ChannelSplit* split_of(Module& m) {
  auto* layer = dynamic_cast<ChannelLayer*>(&m);
  return layer ? layer->channel_split() : nullptr;
}

std::vector<ChannelSplit*> splits_of(Module& model) {
  std::vector<ChannelSplit*> r;
  model.visit([&](Module& m) {
    if (ChannelSplit* s = split_of(m)) r.push_back(s);
  });
  return r;
}

}  // namespace

int place_hetero(Module& model, Device home, const SplitSetting& s) {
  check(s.automatic || (s.ratio >= 0 && s.ratio <= 1), "split share " + std::to_string(s.ratio) + " not in [0, 1]");
  model.to(home);
  int n = 0;
  model.visit([&](Module& m) {
    auto* layer = dynamic_cast<ChannelLayer*>(&m);
    if (!layer) return;
    ChannelSplit* split = &layer->split(home);
    ++n;
    // Also puts back a split layer's host part that model.to moved to home.
    split->set_home_rows(s.automatic ? split->rows() : home_rows_for(s.ratio, split->rows(), split->step()));
    if (s.automatic) split->tune = ChannelSplit::Tune::pending;
  });
  return n;
}

void prepare_split(Module& model, const Tensor& batch) {
  std::vector<ChannelSplit*> pending, fixed;
  for (ChannelSplit* s : splits_of(model)) {
    if (s->tune == ChannelSplit::Tune::pending) pending.push_back(s);
    else if (s->home_rows() < s->rows())
      fixed.push_back(s);
  }
  if (pending.empty() && fixed.empty()) return;
  for (ChannelSplit* s : pending) s->tune = ChannelSplit::Tune::now;
  for (ChannelSplit* s : fixed) s->choose_host_form = true;
  const bool was_training = model.training();
  model.eval();  // no running-statistics update, no dropout draw
  // Fake quantizers (QAT) have seen no data yet: they use the batch's
  // ranges without keeping them.
  TransientRanges ranges;
  try {
    model(Var(to_device(batch, (pending.empty() ? fixed : pending).front()->link().home())));
  } catch (...) {
    model.train(was_training);
    throw;
  }
  model.train(was_training);
  for (ChannelSplit* s : pending)
    check(s->tune == ChannelSplit::Tune::none, "split layer '" + s->name() + "' was not reached by the forward");
}

std::vector<int64_t> split_home_rows(Module& model) {
  std::vector<int64_t> rows;
  for (ChannelSplit* s : splits_of(model)) rows.push_back(s->home_rows());
  return rows;
}

void set_split_home_rows(Module& model, const std::vector<int64_t>& home_rows) {
  std::vector<ChannelSplit*> splits = splits_of(model);
  check(splits.size() == home_rows.size(), fmt::format("{} split layers, {} splits given", splits.size(), home_rows.size()));
  for (size_t k = 0; k < splits.size(); ++k) {
    ChannelSplit& s = *splits[k];
    check(home_rows[k] >= 0 && home_rows[k] <= s.rows() && home_rows[k] % s.step() == 0,
          fmt::format("split layer '{}': {} of {} channels on the GPU (in steps of {})", s.name(), home_rows[k],
                      s.rows(), s.step()));
    s.set_home_rows(home_rows[k]);
    s.tune = ChannelSplit::Tune::none;
  }
}

std::vector<SplitRow> split_summary(Module& model) {
  std::vector<SplitRow> rows;
  for (ChannelSplit* s : splits_of(model)) {
    SplitRow r;
    r.layer = s->layer();
    r.input_shape = s->timing.input_shape;
    r.channels = s->rows();
    r.r = s->r();
    r.tuned = s->timing.tuned;
    r.t_gpu = s->timing.t_home, r.t_cpu = s->timing.t_host, r.t_split = s->timing.t_split;
    r.cpu_int8 = s->timing.host_int8;
    rows.push_back(r);
  }
  return rows;
}

std::string format_split_summary(const std::vector<SplitRow>& rows) {
  std::string out = fmt::format("{:<24} {:<20} {:>8} {:>9} {:>10} {:>10} {:>10} {:>8}\n", "layer", "input",
                                "channels", "cpu share", "gpu ms", "cpu ms", "split ms", "cpu fwd");
  for (const SplitRow& r : rows) {
    const char* form = r.r == 1 ? "-" : r.cpu_int8 ? "int8" : "f32";
    if (r.tuned)
      out += fmt::format("{:<24} {:<20} {:>8} {:>9.3f} {:>10.3f} {:>10.3f} {:>10.3f} {:>8}\n", r.layer, r.input_shape,
                         r.channels, 1 - r.r, r.t_gpu * 1e3, r.t_cpu * 1e3, r.t_split * 1e3, form);
    else
      out += fmt::format("{:<24} {:<20} {:>8} {:>9.3f} {:>10} {:>10} {:>10} {:>8}\n", r.layer, "(fixed)", r.channels,
                         1 - r.r, "-", "-", "-", form);
  }
  return out;
}

}  // namespace tandem::train
