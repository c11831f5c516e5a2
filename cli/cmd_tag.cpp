// `tandem tag PATH...`: tag every photo under the given files and folders.
// The model is loaded once; decoding runs on every core while the network
// runs batch after batch (pipeline/tagger.h); a progress line while it runs,
// a summary at the end naming the stage that limited the run.
#include <fmt/core.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/progress.h"
#include "pipeline/model_store.h"
#include "pipeline/tag_summary.h"
#include "pipeline/tagger.h"
#include "profile/session.h"

namespace tandem::cli {

namespace {

struct TagOptions {
  std::vector<std::string> paths;
  std::string model;
  int decoders = 0;
  int batch = 0;
  int top = 5;
  float min_score = -1.f;
  bool json = false;
  CommonOptions common;
};

struct Inputs {
  std::vector<pipeline::InputFile> files;
  int64_t ignored = 0;
};

int64_t mtime_ns(const std::filesystem::directory_entry& e, std::error_code& ec) {
  auto t = e.last_write_time(ec);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Regular files under the paths, sorted; what cannot be listed is reported.
Inputs collect(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  Inputs in;
  auto add = [&](const fs::directory_entry& e) {
    std::error_code ec;
    if (!e.is_regular_file(ec)) return;
    int64_t size = int64_t(e.file_size(ec));
    in.files.push_back({e.path().string(), ec ? 0 : size, mtime_ns(e, ec)});
  };
  for (const std::string& p : paths) {
    std::error_code ec;
    fs::directory_entry root(p, ec);
    if (ec || !root.exists(ec)) {
      fmt::print(stderr, "tandem: {}: not found\n", p);
      ++in.ignored;
      continue;
    }
    if (!root.is_directory(ec)) {
      add(root);
      continue;
    }
    for (fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec))
      add(*it);
    if (ec) fmt::print(stderr, "tandem: {}: {}\n", p, ec.message());
  }
  std::sort(in.files.begin(), in.files.end(), [](auto& a, auto& b) { return a.path < b.path; });
  return in;
}

void print_record(const pipeline::TagRecord& r, bool json) {
  if (json) {
    nlohmann::json tags = nlohmann::json::array();
    for (const auto& t : r.tags) tags.push_back({{"label", t.label}, {"score", std::round(t.score * 1000.f) / 1000.f}});
    nlohmann::json j = {{"path", r.path}, {"ok", r.ok}, {"tags", tags}};
    if (!r.ok) j["error"] = r.error, j["error_kind"] = r.error_kind;
    fmt::print("{}\n", j.dump());
    return;
  }
  if (!r.ok) {
    fmt::print("{}: error ({}): {}\n", r.path, r.error_kind, r.error);
    return;
  }
  std::string tags;
  for (const auto& t : r.tags) tags += fmt::format("{}{} {:.2f}", tags.empty() ? "" : ", ", t.label, t.score);
  fmt::print("{}: {}\n", r.path, tags.empty() ? "(no tags)" : tags);
}

int tag_command(TagOptions& o) {
  profile::TraceSession trace(o.common.trace_path);
  pipeline::TagModelOptions mo;
  mo.model = pipeline::resolve_model(o.model.empty() ? pipeline::kDefaultModel : o.model);
  mo.device = resolve_device(o.common);
  mo.precision = parse_precision(o.common.precision);
  mo.threads = o.common.threads;
  mo.top = o.top;
  mo.min_score = o.min_score;
  bool on_cpu = mo.device.is_cpu();
  if (on_cpu && o.common.threads == 0)  // decoders take the other cores
    mo.threads = std::max(1, int(std::thread::hardware_concurrency()) - pipeline::default_decoders(true));
  std::unique_ptr<pipeline::TagModel> model = pipeline::load_tag_model(mo);

  Inputs in = collect(o.paths);
  pipeline::TaggerOptions to;
  to.decoders = o.decoders;
  to.batch = o.batch > 0 ? o.batch : (on_cpu ? 8 : 128);
  pipeline::Tagger tagger(*model, to);
  pipeline::TagStats stats;
  {
    ProgressPrinter progress(tagger.progress());
    stats = tagger.run(in.files, [&](std::vector<pipeline::TagRecord>& group) {
      for (const auto& r : group) print_record(r, o.json);
      std::fflush(stdout);
    });
  }
  pipeline::diagnose(stats, on_cpu);
  fmt::print(stderr, "{}", pipeline::format_summary(stats, 0, in.ignored));
  return stats.failed ? 1 : 0;
}

}  // namespace

void add_tag_command(CLI::App& app) {
  auto o = std::make_shared<TagOptions>();
  CLI::App* sub = app.add_subcommand("tag", "Tag every photo under files and folders (decoding on all cores)");
  sub->add_option("paths", o->paths, "Photos and folders (searched recursively)")->required();
  sub->add_option("--model,-m", o->model,
                  fmt::format("An installed model's name, a TF.js detector or an ImageNet .onnx classifier "
                              "(default: {})",
                              pipeline::kDefaultModel));
  sub->add_option("--decoders", o->decoders, "Decoder threads (default: every core with a GPU, half without)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--batch", o->batch, "Images per network run (default: 128 on a GPU, 8 on the CPU)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--top", o->top, "At most this many tags per photo")->check(CLI::PositiveNumber);
  sub->add_option("--min-score", o->min_score, "Drop tags scoring below (default 0.25 detector, 0.05 classifier)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_flag("--json", o->json, "One JSON object per photo and line on stdout");
  add_common_options(sub, o->common);
  on_run(sub, [o] { return tag_command(*o); });
}

}  // namespace tandem::cli
