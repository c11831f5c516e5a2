// summary.json: writing, reading back, and finding it in a profile folder.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "profile/summary_io.h"

namespace tandem::profile {
namespace {

using nlohmann::json;
constexpr const char* kFormat = "tandem-profile-summary";
constexpr int kVersion = 1;

json split_json(const TimeSplit& split) {
  json j = json::object();
  for (Activity a : kAllActivities) j[activity_key(a)] = split[a];
  return j;
}

TimeSplit split_from(const json& j) {
  TimeSplit split;
  for (Activity a : kAllActivities) split[a] = j.at(activity_key(a)).get<uint64_t>();
  return split;
}

json stage_json(const StageSummary& st) {
  return {{"name", st.name},         {"activity", activity_key(st.activity)},
          {"count", st.count},       {"total_ns", st.total_ns},
          {"self_ns", st.self_ns},   {"mean_ns", st.mean_ns},
          {"p50_ns", st.p50_ns},     {"p99_ns", st.p99_ns},
          {"max_ns", st.max_ns},     {"share", st.share}};
}

StageSummary stage_from(const json& j) {
  StageSummary st;
  st.name = j.at("name").get<std::string>();
  st.activity = activity_from_key(j.at("activity").get<std::string>());
  st.count = j.at("count").get<uint64_t>();
  st.total_ns = j.at("total_ns").get<uint64_t>();
  st.self_ns = j.at("self_ns").get<uint64_t>();
  st.mean_ns = j.at("mean_ns").get<uint64_t>();
  st.p50_ns = j.at("p50_ns").get<uint64_t>();
  st.p99_ns = j.at("p99_ns").get<uint64_t>();
  st.max_ns = j.at("max_ns").get<uint64_t>();
  st.share = j.at("share").get<double>();
  return st;
}

json gpu_json(const GpuSummary& g) {
  json j = {{"present", g.present}, {"note", g.note}};
  if (!g.present) return j;
  const GpuTime& t = g.time;
  j["span_ns"] = g.span_ns;
  j["busy_ns"] = t.busy_ns();
  j["time"] = {{"kernels_ns", t.kernels_ns},        {"copies_only_ns", t.copies_only_ns}, {"sync_ns", t.sync_ns},
               {"in_calls_ns", t.in_calls_ns},      {"not_submitting_ns", t.not_submitting_ns}};
  j["counts"] = {{"streams", g.streams}, {"kernels", g.kernels},     {"copies", g.copies},
                 {"memsets", g.memsets}, {"api_calls", g.api_calls}, {"dropped", g.dropped}};
  json kernels = json::array();
  for (const KernelStats& k : g.top_kernels)
    kernels.push_back({{"name", k.name},     {"count", k.count},   {"total_ns", k.total_ns},
                       {"mean_ns", k.mean_ns}, {"min_ns", k.min_ns}, {"max_ns", k.max_ns}});
  j["top_kernels"] = kernels;
  json by_stage = json::array();
  for (const StageGpuStats& st : g.by_stage)
    by_stage.push_back({{"stage", st.stage}, {"ops", st.ops}, {"kernel_ns", st.kernel_ns}, {"copy_ns", st.copy_ns}});
  j["by_stage"] = by_stage;
  json copies = json::array();
  for (const CopyStats& c : g.copies_by_kind)
    copies.push_back({{"kind", copy_kind_name(c.kind)}, {"count", c.count}, {"bytes", c.bytes},
                      {"total_ns", c.total_ns},         {"gb_per_s", c.gb_per_s}});
  j["copies"] = copies;
  return j;
}

}  // namespace

std::string summary_to_json(const ProfileSummary& s) {
  json threads = json::array();
  for (const ThreadSummary& t : s.threads)
    threads.push_back({{"name", t.name}, {"tid", t.tid}, {"begin_ns", t.begin_ns}, {"end_ns", t.end_ns},
                       {"split", split_json(t.split)}});
  json stages = json::array();
  for (const StageSummary& st : s.stages) stages.push_back(stage_json(st));
  const Overhead& o = s.overhead;
  json counters = json::array();
  for (const CounterSummary& c : s.counters)
    counters.push_back({{"name", c.name}, {"samples", c.samples}, {"min", c.min}, {"mean", c.mean}, {"max", c.max},
                        {"last", c.last}});
  json layers = json::array();
  for (const LayerRow& r : s.layers)
    layers.push_back({{"layer", r.layer},
                      {"forward_ns", r.forward_ns},
                      {"backward_ns", r.backward_ns},
                      {"cpu_side_ns", r.cpu_side_ns},
                      {"gpu_ns", r.gpu_ns}});
  json j = {{"format", kFormat},
            {"version", kVersion},
            {"wall_ns", s.wall_ns},
            {"split", split_json(s.overall)},
            {"threads", threads},
            {"stages", stages},
            {"overhead",
             {{"zones", o.zones},
              {"counters", o.counters},
              {"dropped_zones", o.dropped_zones},
              {"dropped_counters", o.dropped_counters},
              {"ns_per_event", o.ns_per_event},
              {"estimated_ns", o.estimated_ns()}}},
            {"counters", counters},
            {"gpu", gpu_json(s.gpu)},
            {"layers", layers},
            {"verdict", s.verdict}};
  return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

ProfileSummary summary_from_json(const std::string& text, const std::string& source) {
  ErrorContext where;
  where.file = source;
  try {
    const json j = json::parse(text);
    check(j.value("format", "") == kFormat, "not a tandem profile summary (no \"format\": \"" +
                                                std::string(kFormat) + "\")", where);
    check(j.at("version").get<int>() == kVersion,
          "summary version " + j.at("version").dump() + ", this tandem reads " + std::to_string(kVersion), where);
    ProfileSummary s;
    s.wall_ns = j.at("wall_ns").get<uint64_t>();
    s.overall = split_from(j.at("split"));
    for (const json& t : j.at("threads")) {
      ThreadSummary ts;
      ts.name = t.at("name").get<std::string>();
      ts.tid = t.at("tid").get<uint32_t>();
      ts.begin_ns = t.at("begin_ns").get<uint64_t>();
      ts.end_ns = t.at("end_ns").get<uint64_t>();
      ts.split = split_from(t.at("split"));
      s.threads.push_back(std::move(ts));
    }
    for (const json& st : j.at("stages")) s.stages.push_back(stage_from(st));
    const json& o = j.at("overhead");
    s.overhead.zones = o.at("zones").get<uint64_t>();
    s.overhead.counters = o.at("counters").get<uint64_t>();
    s.overhead.dropped_zones = o.at("dropped_zones").get<uint64_t>();
    s.overhead.dropped_counters = o.at("dropped_counters").get<uint64_t>();
    s.overhead.ns_per_event = o.at("ns_per_event").get<double>();
    s.verdict = j.at("verdict").get<std::string>();
    for (const json& c : j.value("counters", json::array()))  // absent in summaries older than counters
      s.counters.push_back({c.at("name").get<std::string>(), c.at("samples").get<uint64_t>(), c.at("min").get<double>(),
                            c.at("mean").get<double>(), c.at("max").get<double>(), c.at("last").get<double>()});
    for (const json& r : j.value("layers", json::array()))  // absent in summaries older than the layer table
      s.layers.push_back({r.at("layer").get<std::string>(), r.at("forward_ns").get<uint64_t>(),
                          r.at("backward_ns").get<uint64_t>(), r.at("cpu_side_ns").get<uint64_t>(),
                          r.at("gpu_ns").get<uint64_t>()});
    return s;
  } catch (const json::exception& e) {
    throw Error(std::string("bad profile summary: ") + e.what(), where);
  } catch (const Error& e) {
    throw e.with_context(where);
  }
}

ProfileSummary read_summary(const std::string& path) {
  std::filesystem::path p(path);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) p /= "summary.json";
  std::ifstream file(p, std::ios::binary);
  check(bool(file), "cannot open profile summary", ErrorContext{p.string(), "", "", ""});
  std::ostringstream text;
  text << file.rdbuf();
  return summary_from_json(text.str(), p.string());
}

}  // namespace tandem::profile
