// GPU activity in the profiler, on synthetic traces (no GPU needed): the
// summary's busy union, idle buckets, kernel and copy tables against values
// worked out by hand below, and the Chrome trace's GPU rows and flow arrows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "profile/chrome_trace.h"
#include "profile/classify.h"
#include "profile/gpu_summary.h"
#include "profile/report_html.h"
#include "profile/session.h"
#include "profile/summary.h"
#include "profile/summary_io.h"

namespace tandem {
namespace {

using nlohmann::json;
using profile::CopyKind;
using profile::GpuOp;
using profile::GpuOpKind;

GpuOp op(GpuOpKind kind, uint32_t name, uint64_t start, uint64_t end, uint32_t corr = 0, uint64_t bytes = 0,
         CopyKind copy = CopyKind::none) {
  GpuOp o;
  o.kind = kind, o.name = name, o.start_ns = start, o.end_ns = end, o.correlation = corr, o.bytes = bytes;
  o.copy = copy;
  return o;
}

// Span [0, 1000) ns. Kernels and the memset: [100,300] [400,500] on stream 7,
// [200,450] and [900,950] on stream 9: union [100,500] + [900,950] = 450 ns.
// Copies [600,700] (HtoD, 1000 B) and [650,800] (DtoH, 3000 B): 200 ns with
// no kernel. Busy 650 ns (the per-op sum would be 850).
// Idle 350 ns: [0,100] has the call [50,90] (40 in calls, 60 not submitting);
// [500,600] has the wait.gpu zone [480,580] (80 sync) then the call [560,620]
// (20 in calls); [800,900] has the call [850,870] (20 in calls, 80 not
// submitting); [950,1000] is 50 not submitting. Totals: sync 80, in calls 80,
// not submitting 190.
profile::Trace synthetic_gpu_trace() {
  profile::Trace t;
  t.begin_ns = 0, t.end_ns = 1000;
  t.locations.push_back({"stream sync", "x.cpp", 1, "wait.gpu"});
  profile::Track host;
  host.tid = 1, host.os_tid = 4242, host.name = "main";
  host.zones.push_back({480, 580, 0, 0});
  t.tracks.push_back(host);

  profile::GpuActivity g;
  g.collected = true;
  g.names = {"kernelA", "kernelB", "memcpy HtoD", "memcpy DtoH", "memset", "cudaLaunchKernel", "cudaMemcpyAsync"};
  profile::GpuStream s7{0, 7, {}}, s9{0, 9, {}};
  s7.ops.push_back(op(GpuOpKind::kernel, 0, 100, 300, 1));
  s7.ops.push_back(op(GpuOpKind::kernel, 0, 400, 500));
  s7.ops.push_back(op(GpuOpKind::memcpy, 2, 600, 700, 3, 1000, CopyKind::htod));
  s9.ops.push_back(op(GpuOpKind::kernel, 1, 200, 450));
  s9.ops.push_back(op(GpuOpKind::memcpy, 3, 650, 800, 0, 3000, CopyKind::dtoh));
  s9.ops.push_back(op(GpuOpKind::memset, 4, 900, 950, 5, 64));
  g.streams = {s7, s9};
  g.api_calls.push_back({4242, 0, 5, 1, 50, 90});
  g.api_calls.push_back({4242, 0, 6, 3, 560, 620});
  g.api_calls.push_back({999, 0, 5, 5, 850, 870});  // a thread the profiler never saw
  g.dropped = 2;
  profile::attach_gpu_activity(t, std::move(g));
  return t;
}

TEST(GpuActivity, UnionOfIntervalsMergesOverlapsAndTouches) {
  const auto u = profile::union_intervals({{50, 60}, {10, 20}, {15, 30}, {30, 40}, {12, 14}, {70, 70}});
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].begin, 10u);
  EXPECT_EQ(u[0].end, 40u);
  EXPECT_EQ(u[1].begin, 50u);
  EXPECT_EQ(u[1].end, 60u);
  EXPECT_EQ(profile::total_length(u), 40u);
}

TEST(GpuActivity, BusyIsTheUnionAcrossStreamsAndGapsHaveCauses) {
  const profile::GpuSummary g = profile::summarize_gpu(synthetic_gpu_trace());
  ASSERT_TRUE(g.present);
  EXPECT_EQ(g.span_ns, 1000u);
  EXPECT_EQ(g.time.kernels_ns, 450u);
  EXPECT_EQ(g.time.copies_only_ns, 200u);
  EXPECT_EQ(g.time.busy_ns(), 650u);
  EXPECT_EQ(g.time.sync_ns, 80u);
  EXPECT_EQ(g.time.in_calls_ns, 80u);
  EXPECT_EQ(g.time.not_submitting_ns, 190u);
  EXPECT_EQ(g.streams, 2u);
  EXPECT_EQ(g.kernels, 3u);
  EXPECT_EQ(g.copies, 2u);
  EXPECT_EQ(g.memsets, 1u);
  EXPECT_EQ(g.dropped, 2u);
}

TEST(GpuActivity, TopKernelsByTotalTime) {
  const profile::GpuSummary g = profile::summarize_gpu(synthetic_gpu_trace());
  ASSERT_EQ(g.top_kernels.size(), 2u);
  const profile::KernelStats& a = g.top_kernels[0];
  EXPECT_EQ(a.name, "kernelA");
  EXPECT_EQ(a.count, 2u);
  EXPECT_EQ(a.total_ns, 300u);
  EXPECT_EQ(a.mean_ns, 150u);
  EXPECT_EQ(a.min_ns, 100u);
  EXPECT_EQ(a.max_ns, 200u);
  EXPECT_EQ(g.top_kernels[1].name, "kernelB");
  EXPECT_EQ(g.top_kernels[1].total_ns, 250u);
}

TEST(GpuActivity, CopiesByDirection) {
  const profile::GpuSummary g = profile::summarize_gpu(synthetic_gpu_trace());
  ASSERT_EQ(g.copies_by_kind.size(), 2u);
  EXPECT_EQ(g.copies_by_kind[0].kind, CopyKind::htod);
  EXPECT_EQ(g.copies_by_kind[0].bytes, 1000u);
  EXPECT_DOUBLE_EQ(g.copies_by_kind[0].gb_per_s, 10.0);  // 1000 B / 100 ns
  EXPECT_EQ(g.copies_by_kind[1].kind, CopyKind::dtoh);
  EXPECT_DOUBLE_EQ(g.copies_by_kind[1].gb_per_s, 20.0);  // 3000 B / 150 ns
}

TEST(GpuActivity, ApiCallsJoinTheProfilerThreads) {
  const profile::Trace t = synthetic_gpu_trace();
  EXPECT_EQ(t.gpu.api_calls[0].tid, 1u);
  ASSERT_EQ(t.tracks.size(), 2u);
  EXPECT_EQ(t.gpu.api_calls[2].tid, t.tracks[1].tid);
  EXPECT_NE(t.tracks[1].tid, 1u);
  EXPECT_EQ(t.tracks[1].os_tid, 999u);
}

// GPU time by launching zone: each op goes to the innermost zone open on the
// launching thread when its API call began. Host zones: "forward L" [0,300)
// holding "split L gpu forward" [100,200), then "backward L" [400,800).
// Launches at 50, 150, 250 (the child has ended: its parent again), 450,
// 900 (outside every zone); one op has no correlation id.
TEST(GpuActivity, GpuTimeGoesToTheZoneThatLaunchedIt) {
  profile::Trace t;
  t.begin_ns = 0, t.end_ns = 1000;
  t.locations = {{"forward L", "x.cpp", 1, "layer"}, {"split L gpu forward", "x.cpp", 2, "split"},
                 {"backward L", "x.cpp", 3, "layer"}};
  profile::Track host;
  host.tid = 1, host.os_tid = 77, host.name = "main";
  host.zones = {{0, 300, 0, 0}, {100, 200, 1, 1}, {400, 800, 2, 0}};
  t.tracks.push_back(host);
  profile::GpuActivity g;
  g.collected = true;
  g.names = {"k", "memcpy", "cudaLaunchKernel"};
  profile::GpuStream s{0, 7, {}};
  s.ops = {op(GpuOpKind::kernel, 0, 60, 160, 1), op(GpuOpKind::kernel, 0, 160, 180, 2),
           op(GpuOpKind::memcpy, 1, 260, 300, 3, 8, CopyKind::dtoh), op(GpuOpKind::kernel, 0, 460, 530, 4),
           op(GpuOpKind::kernel, 0, 910, 915, 5), op(GpuOpKind::kernel, 0, 920, 925, 0)};
  g.streams = {s};
  for (uint32_t corr : {1u, 2u, 3u, 4u, 5u}) {
    const uint64_t at[] = {0, 50, 150, 250, 450, 900};
    g.api_calls.push_back({77, 0, 2, corr, at[corr], at[corr] + 5});
  }
  profile::attach_gpu_activity(t, std::move(g));
  const std::vector<profile::StageGpuStats> by = profile::gpu_time_by_stage(t);
  ASSERT_EQ(by.size(), 4u);
  EXPECT_EQ(by[0].stage, "forward L");
  EXPECT_EQ(by[0].ops, 2u);
  EXPECT_EQ(by[0].kernel_ns, 100u);
  EXPECT_EQ(by[0].copy_ns, 40u);
  EXPECT_EQ(by[1].stage, "backward L");
  EXPECT_EQ(by[1].kernel_ns, 70u);
  EXPECT_EQ(by[2].stage, "split L gpu forward");
  EXPECT_EQ(by[2].kernel_ns, 20u);
  EXPECT_EQ(by[3].stage, profile::kNoZone);
  EXPECT_EQ(by[3].ops, 2u);
  EXPECT_EQ(by[3].kernel_ns, 10u);
  const std::string text = profile::format_summary(profile::summarize(t));
  EXPECT_NE(text.find("GPU time by launching zone"), std::string::npos) << text;
  // The layer table joins the host zones with the GPU time they launched:
  // layer L's GPU time is its forward's 140 ns, its split side's 20 and its
  // backward's 70.
  const profile::ProfileSummary sum = profile::summarize(t);
  ASSERT_EQ(sum.layers.size(), 1u);
  EXPECT_EQ(sum.layers[0].layer, "L");
  EXPECT_EQ(sum.layers[0].forward_ns, 300u);
  EXPECT_EQ(sum.layers[0].backward_ns, 400u);
  EXPECT_EQ(sum.layers[0].gpu_ns, 230u);
  EXPECT_NE(profile::format_summary(sum).find("layers (host thread time"), std::string::npos);
}

TEST(GpuActivity, SummaryTextAndJson) {
  const profile::ProfileSummary s = profile::summarize(synthetic_gpu_trace());
  const std::string text = profile::format_summary(s);
  EXPECT_NE(text.find("GPU busy 65.0% of the wall"), std::string::npos) << text;
  EXPECT_NE(text.find("CPU not submitting 19.0%"), std::string::npos) << text;
  const json j = json::parse(profile::summary_to_json(s));
  EXPECT_EQ(j["gpu"]["busy_ns"], 650);
  EXPECT_EQ(j["gpu"]["time"]["sync_ns"], 80);
  EXPECT_EQ(j["gpu"]["top_kernels"][0]["name"], "kernelA");
  EXPECT_EQ(j["gpu"]["copies"][1]["kind"], "DtoH");
  // Only the launch at 560 falls in a zone (the wait.gpu zone [480, 580)).
  ASSERT_EQ(j["gpu"]["by_stage"].size(), 2u);
  EXPECT_EQ(j["gpu"]["by_stage"][1]["stage"], "stream sync");
  EXPECT_EQ(j["gpu"]["by_stage"][1]["copy_ns"], 100);
}

TEST(GpuActivity, UnavailableIsOneNoteAndNoGpuRunSaysNothing) {
  profile::Trace t;
  t.end_ns = 10;
  const std::string cpu_only = profile::format_summary(profile::summarize(t));
  EXPECT_EQ(cpu_only.find("GPU activity"), std::string::npos) << cpu_only;
  EXPECT_EQ(cpu_only.find("GPU busy"), std::string::npos) << cpu_only;
  t.gpu.unavailable = "CUPTI not available: libcupti.so.13: cannot open shared object file";
  const std::string text = profile::format_summary_short(profile::summarize(t));
  EXPECT_NE(text.find("GPU activity: CUPTI not available: libcupti.so.13"), std::string::npos) << text;
}

TEST(GpuActivity, ChromeTraceHasGpuRowsAndFlowPairs) {
  const json doc = json::parse(profile::chrome_trace_json(synthetic_gpu_trace()));
  std::map<std::string, int> x_by_cat;
  std::set<std::string> names;
  std::map<uint64_t, json> starts, finishes;
  for (const json& e : doc["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["pid"] == 100) names.insert(e["name"].get<std::string>() + ":" + e["args"]["name"].get<std::string>());
    if (ph == "X") x_by_cat[e.value("cat", "")]++;
    if (ph == "s") starts[e["id"]] = e;
    if (ph == "f") finishes[e["id"]] = e;
  }
  EXPECT_TRUE(names.count("process_name:GPU 0"));
  EXPECT_TRUE(names.count("thread_name:stream 7"));
  EXPECT_TRUE(names.count("thread_name:stream 9"));
  EXPECT_EQ(x_by_cat["kernel"], 3);
  EXPECT_EQ(x_by_cat["memcpy"], 2);
  EXPECT_EQ(x_by_cat["memset"], 1);
  EXPECT_EQ(x_by_cat["cuda_api"], 3);
  // Correlations 1, 3 and 5 have a launch; the other ops have none.
  ASSERT_EQ(starts.size(), 3u);
  ASSERT_EQ(finishes.size(), 3u);
  for (const auto& [id, s] : starts) {
    ASSERT_TRUE(finishes.count(id)) << id;
    const json& f = finishes[id];
    EXPECT_EQ(f["bp"], "e");
    EXPECT_EQ(f["pid"], 100);
    EXPECT_EQ(s["pid"], 1);
    EXPECT_LE(s["ts"].get<double>(), f["ts"].get<double>());
  }
}

// A source standing in for CUPTI: TraceSession starts it and joins its API
// call to this thread's track.
class FakeSource : public profile::GpuActivitySource {
 public:
  int starts = 0;
  void start() override { starts++; }
  void stop(profile::GpuActivity& out) override {
    out.collected = true;
    out.names = {"k", "cudaLaunchKernel"};
    const uint64_t now = profile::now_ns();
    out.streams.push_back({0, 1, {op(GpuOpKind::kernel, 0, now - 10, now - 5, 9)}});
    out.api_calls.push_back({uint64_t(::gettid()), 0, 1, 9, now - 20, now - 15});
  }
};

TEST(GpuActivity, TraceSessionRunsTheInstalledSource) {
#if !(defined(TANDEM_PROFILE) && TANDEM_PROFILE)
  GTEST_SKIP() << "zones are compiled out (TANDEM_PROFILE=OFF)";
#endif
  FakeSource source;
  profile::GpuActivitySource* previous = profile::set_gpu_activity_source(&source);
  profile::Trace trace;
  {
    profile::TraceSession s(profile::SessionOutputs{::testing::TempDir() + "/gpu_fake_trace.json", ""});
    { TANDEM_ZONE("work"); }
    trace = s.finish();
  }
  profile::set_gpu_activity_source(previous);
  EXPECT_EQ(source.starts, 1);
  ASSERT_TRUE(trace.gpu.collected);
  ASSERT_EQ(trace.gpu.api_calls.size(), 1u);
  bool found = false;
  for (const profile::Track& t : trace.tracks) found |= t.tid == trace.gpu.api_calls[0].tid && !t.zones.empty();
  EXPECT_TRUE(found) << "the API call is not on the thread that recorded the zone";
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// report.html's data: one lane per GPU stream after the thread lanes, its
// operations as zones named from GpuActivity::names, copies coloured as I/O.
TEST(GpuActivity, ReportHasOneLanePerStream) {
  const profile::Trace t = synthetic_gpu_trace();
  const json d = json::parse(profile::report_data(t, profile::summarize(t)));
  std::vector<json> gpu;
  for (const json& track : d["tracks"])
    if (track["kind"] == "gpu_stream") gpu.push_back(track);
  ASSERT_EQ(gpu.size(), 2u);
  EXPECT_EQ(gpu[0]["name"], "device 0 stream 7");
  EXPECT_EQ(gpu[0]["begin_ns"], 100);
  EXPECT_EQ(gpu[0]["end_ns"], 700);
  const json& z = gpu[0]["zones"];
  EXPECT_EQ(z["begin"], json::array({100, 400, 600}));
  EXPECT_EQ(z["dur"], json::array({200, 100, 100}));
  std::vector<std::string> names;
  for (const json& l : z["loc"]) names.push_back(d["names"][l.get<size_t>()]);
  EXPECT_EQ(names, (std::vector<std::string>{"kernelA", "kernelA", "memcpy HtoD"}));
  const size_t copy_loc = z["loc"][2].get<size_t>(), kernel_loc = z["loc"][0].get<size_t>();
  EXPECT_EQ(d["location_activity"][copy_loc], size_t(profile::Activity::io));
  EXPECT_EQ(d["location_activity"][kernel_loc], size_t(profile::Activity::compute));
  EXPECT_EQ(gpu[1]["zones"]["begin"].size(), 3u);
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// The page for a run with GPU streams. tests/cli/report_html_e2e.py runs this
// test with TANDEM_REPORT_SAMPLE_DIR set and loads the page in Chromium (no
// GPU needed to check the GPU lanes draw).
TEST(GpuActivity, ReportHtmlForTheBrowserTest) {
  const profile::Trace t = synthetic_gpu_trace();
  profile::ProfileSummary s = profile::summarize(t);
  s.verdict = "synthetic GPU run";
  const std::string page = profile::report_html(t, s);
  EXPECT_NE(page.find("\"gpu_stream\""), std::string::npos);
  const char* dir = std::getenv("TANDEM_REPORT_SAMPLE_DIR");
  if (dir == nullptr) return;
  std::filesystem::create_directories(dir);
  std::ofstream(std::filesystem::path(dir) / "report.html") << page;
  std::ofstream(std::filesystem::path(dir) / "summary.json") << profile::summary_to_json(s);
}

}  // namespace
}  // namespace tandem
