// The profile summary on hand-built traces. References: the time split,
// stage table and percentiles of each trace, worked out by hand in the
// comments (integer ns, exact); the category rules of profile/classify.h.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "pipeline/tag_profile.h"
#include "profile/classify.h"
#include "profile/overhead.h"
#include "profile/session.h"
#include "profile/summary_io.h"
#include "profile/zone.h"
#include "profile/zone_names.h"
#include "temp_dir.h"

namespace profile = tandem::profile;
using profile::Activity;

namespace {

TEST(ProfileClassify, CategoryRules) {
  EXPECT_EQ(profile::classify(""), Activity::compute);
  EXPECT_EQ(profile::classify("op"), Activity::compute);
  EXPECT_EQ(profile::classify("tag"), Activity::compute);
  EXPECT_EQ(profile::classify("wait.gpu"), Activity::wait_gpu);
  EXPECT_EQ(profile::classify("wait.queue"), Activity::wait_lock);
  EXPECT_EQ(profile::classify("wait.lock"), Activity::wait_lock);
  EXPECT_EQ(profile::classify("wait.other"), Activity::wait_lock);
  EXPECT_EQ(profile::classify("io"), Activity::io);
  EXPECT_EQ(profile::classify("io.write"), Activity::io);
  EXPECT_EQ(profile::classify("iota"), Activity::compute);  // not "io" nor "io.*"
  EXPECT_EQ(profile::classify("wait"), Activity::compute);  // not "wait.*"
  for (Activity a : profile::kAllActivities) EXPECT_EQ(profile::activity_from_key(profile::activity_key(a)), a);
  EXPECT_THROW(profile::activity_from_key("busy"), tandem::Error);
}

// Two threads of a pipeline (ns, trace [0, 1000]):
//  inference: batch wait [0,300] wait.queue
//             inference [300,900] > plan.run [310,880] > Conv a [320,500], cuda synchronize [500,850] wait.gpu
//             a counter sample at 1000 (its lifetime ends there)
//  decoder-0: read [100,200] io, decode [200,500], queue wait [500,600] wait.queue,
//             read [600,650] io, decode [650,800] (a second site of "decode")
// inference: wait_lock 300; compute = inference self 600-570 + plan.run self 570-180-350 + Conv 180 = 250;
//            wait_gpu 350; idle = 1000 - 900 = 100.  decoder-0 [100,800]: io 150, compute 450, wait_lock 100.
profile::Trace pipeline_trace() {
  profile::Trace t;
  t.begin_ns = 0;
  t.end_ns = 1000;
  t.locations = {{"batch wait", "", 1, "wait.queue"}, {"inference", "", 2, "tag"},
                 {"plan.run", "", 3, "graph"},        {"Conv a", "", 4, "op"},
                 {"cuda synchronize", "", 5, "wait.gpu"}, {"read", "", 6, "io"},
                 {"decode", "", 7, "tag"},            {"queue wait", "", 8, "wait.queue"},
                 {"decode", "", 9, "tag"}};
  t.counter_names = {"images"};
  profile::Track inf;
  inf.tid = 1;
  inf.name = "inference";
  inf.zones = {{0, 300, 0, 0}, {300, 900, 1, 0}, {310, 880, 2, 1}, {320, 500, 3, 2}, {500, 850, 4, 2}};
  inf.counters = {{1000, 8.0, 0}};
  profile::Track dec;
  dec.tid = 2;
  dec.name = "decoder-0";
  dec.zones = {{100, 200, 5, 0}, {200, 500, 6, 0}, {500, 600, 7, 0}, {600, 650, 5, 0}, {650, 800, 8, 0}};
  t.tracks = {inf, dec};
  return t;
}

const profile::StageSummary& stage(const profile::ProfileSummary& s, const std::string& name) {
  for (const auto& st : s.stages)
    if (st.name == name) return st;
  throw std::runtime_error("no stage " + name);
}

TEST(ProfileSummary, SplitPerThreadAndOverall) {
  const profile::ProfileSummary s = profile::summarize(pipeline_trace(), 20.0);
  EXPECT_EQ(s.wall_ns, 1000u);
  ASSERT_EQ(s.threads.size(), 2u);
  // {compute, wait GPU, I/O, lock/queue, idle}
  using Split = std::array<uint64_t, profile::kActivities>;
  EXPECT_EQ(s.threads[0].name, "inference");
  EXPECT_EQ(s.threads[0].begin_ns, 0u);
  EXPECT_EQ(s.threads[0].end_ns, 1000u);
  EXPECT_EQ(s.threads[0].split.ns, (Split{250, 350, 0, 300, 100}));
  EXPECT_EQ(s.threads[1].begin_ns, 100u);
  EXPECT_EQ(s.threads[1].end_ns, 800u);
  EXPECT_EQ(s.threads[1].split.ns, (Split{450, 0, 150, 100, 0}));
  EXPECT_EQ(s.overall.ns, (Split{700, 350, 150, 400, 100}));
  EXPECT_EQ(s.overhead.zones, 10u);
  EXPECT_EQ(s.overhead.counters, 1u);
  EXPECT_DOUBLE_EQ(s.overhead.estimated_ns(), 11 * 20.0);
}

TEST(ProfileSummary, StageTable) {
  const profile::ProfileSummary s = profile::summarize(pipeline_trace());
  // By self time: decode 450, cuda synchronize 350, batch wait 300, Conv a 180,
  // read 150, queue wait 100, plan.run 40, inference 30 ("decode"'s two sites are one stage).
  const std::vector<std::string> order = {"decode", "cuda synchronize", "batch wait", "Conv a",
                                          "read",   "queue wait",       "plan.run",   "inference"};
  ASSERT_EQ(s.stages.size(), order.size());
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(s.stages[i].name, order[i]);
  const auto& decode = stage(s, "decode");
  EXPECT_EQ(decode.count, 2u);
  EXPECT_EQ(decode.total_ns, 450u);
  EXPECT_EQ(decode.mean_ns, 225u);
  EXPECT_EQ(decode.p50_ns, 150u);  // nearest rank of {150, 300}: ceil(0.5*2) = 1st
  EXPECT_EQ(decode.p99_ns, 300u);
  EXPECT_EQ(decode.max_ns, 300u);
  EXPECT_DOUBLE_EQ(decode.share, 0.45);
  const auto& inference = stage(s, "inference");
  EXPECT_EQ(inference.total_ns, 600u);
  EXPECT_EQ(inference.self_ns, 30u);
  EXPECT_EQ(stage(s, "plan.run").self_ns, 40u);
  EXPECT_EQ(stage(s, "cuda synchronize").activity, Activity::wait_gpu);
  EXPECT_EQ(stage(s, "read").activity, Activity::io);
  EXPECT_EQ(stage(s, "read").count, 2u);
  EXPECT_EQ(stage(s, "batch wait").activity, Activity::wait_lock);
}

TEST(ProfileSummary, ShortenNameKeepsHeadAndTail) {
  EXPECT_EQ(profile::shorten_name("short", 10), "short");
  EXPECT_EQ(profile::shorten_name("Conv /layer2/layer2.1/conv2/Conv", 20), "Conv ...1/conv2/Conv");  // 5 head + 3 + 12 tail
  EXPECT_EQ(profile::shorten_name("Conv /layer2/layer2.1/conv2/Conv", 20).size(), 20u);
}

TEST(ProfileSummary, PercentilesAreNearestRank) {
  // 100 zones lasting 1..100 ns, shuffled in time order: p50 = 50, p99 = 99.
  profile::Trace t;
  t.locations = {{"z", "", 1, ""}};
  profile::Track track;
  uint64_t at = 0;
  for (int i = 0; i < 100; ++i) {
    const uint64_t d = uint64_t((i * 37) % 100 + 1);  // 37 is coprime with 100: a permutation
    track.zones.push_back({at, at + d, 0, 0});
    at += d + 1;
  }
  t.tracks = {track};
  t.end_ns = at;
  const profile::ProfileSummary s = profile::summarize(t);
  ASSERT_EQ(s.stages.size(), 1u);
  EXPECT_EQ(s.stages[0].p50_ns, 50u);
  EXPECT_EQ(s.stages[0].p99_ns, 99u);
  EXPECT_EQ(s.stages[0].max_ns, 100u);
  EXPECT_EQ(s.stages[0].total_ns, 5050u);
  EXPECT_EQ(s.stages[0].mean_ns, 50u);
  // The gaps between the zones are idle: 99 of 1 ns.
  EXPECT_EQ(s.threads[0].split[Activity::idle], 99u);
  EXPECT_EQ(profile::percentile_sorted({}, 50), 0u);
  EXPECT_EQ(profile::percentile_sorted({7}, 99), 7u);
  EXPECT_EQ(profile::percentile_sorted({1, 2, 3, 4}, 25), 1u);
  EXPECT_EQ(profile::percentile_sorted({1, 2, 3, 4}, 26), 2u);
}

void expect_same(const profile::ProfileSummary& a, const profile::ProfileSummary& b) {
  EXPECT_EQ(a.wall_ns, b.wall_ns);
  EXPECT_EQ(a.overall.ns, b.overall.ns);
  ASSERT_EQ(a.threads.size(), b.threads.size());
  for (size_t i = 0; i < a.threads.size(); ++i) {
    EXPECT_EQ(a.threads[i].name, b.threads[i].name);
    EXPECT_EQ(a.threads[i].tid, b.threads[i].tid);
    EXPECT_EQ(a.threads[i].begin_ns, b.threads[i].begin_ns);
    EXPECT_EQ(a.threads[i].end_ns, b.threads[i].end_ns);
    EXPECT_EQ(a.threads[i].split.ns, b.threads[i].split.ns);
  }
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (size_t i = 0; i < a.stages.size(); ++i) {
    const auto &x = a.stages[i], &y = b.stages[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.activity, y.activity);
    EXPECT_EQ(x.count, y.count);
    EXPECT_EQ(x.total_ns, y.total_ns);
    EXPECT_EQ(x.self_ns, y.self_ns);
    EXPECT_EQ(x.mean_ns, y.mean_ns);
    EXPECT_EQ(x.p50_ns, y.p50_ns);
    EXPECT_EQ(x.p99_ns, y.p99_ns);
    EXPECT_EQ(x.max_ns, y.max_ns);
    EXPECT_DOUBLE_EQ(x.share, y.share);
  }
  EXPECT_EQ(a.overhead.zones, b.overhead.zones);
  EXPECT_EQ(a.overhead.counters, b.overhead.counters);
  EXPECT_DOUBLE_EQ(a.overhead.ns_per_event, b.overhead.ns_per_event);
  EXPECT_EQ(a.verdict, b.verdict);
}

TEST(ProfileSummary, JsonRoundTrip) {
  profile::ProfileSummary s = profile::summarize(pipeline_trace(), 17.5);
  s.verdict = "a verdict with \"quotes\" and \xc3\xa9";
  expect_same(profile::summary_from_json(profile::summary_to_json(s)), s);
  EXPECT_THROW(profile::summary_from_json("{}", "x.json"), tandem::Error);
  EXPECT_THROW(profile::summary_from_json("not json", "x.json"), tandem::Error);
  EXPECT_THROW(profile::summary_from_json(R"({"format":"tandem-profile-summary","version":1})"), tandem::Error);
}

profile::StageSummary make_stage(const std::string& name, uint64_t count, uint64_t total) {
  profile::StageSummary st;
  st.name = name;
  st.count = count;
  st.total_ns = st.self_ns = total;
  st.mean_ns = total / count;
  return st;
}

TEST(ProfileSummary, DiffSortsByAbsoluteChange) {
  profile::ProfileSummary a, b;
  a.wall_ns = 2000, b.wall_ns = 1000;
  a.stages = {make_stage("y", 10, 1000), make_stage("x", 1, 100), make_stage("gone", 1, 10)};
  b.stages = {make_stage("y", 10, 900), make_stage("x", 2, 400), make_stage("z", 5, 50)};
  const std::vector<profile::StageDiff> d = profile::diff_stages(a, b);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0].name, "x");  // +300
  EXPECT_EQ(d[0].delta_total_ns(), 300);
  EXPECT_EQ(d[1].name, "y");  // -100
  EXPECT_EQ(d[2].name, "z");  // +50
  EXPECT_EQ(d[2].a.count, 0u);
  EXPECT_EQ(d[3].name, "gone");  // -10
  EXPECT_EQ(d[3].b.count, 0u);
  const std::string text = profile::format_diff(a, b);
  EXPECT_NE(text.find("x4.00"), std::string::npos) << text;  // x's total B/A
  EXPECT_NE(text.find("x0.50"), std::string::npos) << text;  // the wall
  EXPECT_NE(text.find("new"), std::string::npos) << text;
  EXPECT_NE(text.find("gone"), std::string::npos) << text;
}

TEST(ProfileSummary, DiffOfTwoWrittenProfiles) {
  tandem::testing::TempDir dir("profile_diff");
  profile::Trace slow = pipeline_trace();
  profile::Trace fast = pipeline_trace();
  fast.tracks[1].zones[1].end_ns = 300;  // decode [200,300] instead of [200,500]
  fast.tracks[1].zones[2].begin_ns = 300;
  profile::write_profile(slow, (dir.path() / "a").string(), 10);
  profile::write_profile(fast, (dir.path() / "b").string(), 10);
  const auto a = profile::read_summary((dir.path() / "a").string());
  const auto b = profile::read_summary((dir.path() / "b" / "summary.json").string());
  EXPECT_EQ(stage(a, "decode").total_ns, 450u);
  EXPECT_EQ(stage(b, "decode").total_ns, 250u);
  const auto d = profile::diff_stages(a, b);
  EXPECT_EQ(d[0].name, "decode");  // -200
  EXPECT_EQ(d[1].name, "queue wait");  // +200
  EXPECT_THROW(profile::read_summary((dir.path() / "missing").string()), tandem::Error);
}

TEST(ProfileSummary, WriteProfileWritesEveryFile) {
  tandem::testing::TempDir dir("profile_files");
  const std::string out = (dir.path() / "run" / "nested").string();
  const profile::ProfileSummary s = profile::write_profile(pipeline_trace(), out, 10);
  std::ifstream trace(out + "/trace.json");
  const nlohmann::json doc = nlohmann::json::parse(trace);
  size_t x = 0, counters = 0;
  for (const auto& e : doc["traceEvents"]) x += e["ph"] == "X", counters += e["ph"] == "C";
  EXPECT_EQ(x, 10u);
  EXPECT_EQ(counters, 1u);
  std::ifstream text(out + "/summary.txt");
  const std::string summary((std::istreambuf_iterator<char>(text)), {});
  EXPECT_NE(summary.find("verdict: " + s.verdict), std::string::npos);
  EXPECT_NE(summary.find("decoder-0"), std::string::npos);
  expect_same(profile::read_summary(out), s);
  std::ifstream page(out + "/report.html");
  const std::string html((std::istreambuf_iterator<char>(page)), {});
  EXPECT_NE(html.find("\"format\":\"tandem-profile-report\""), std::string::npos);
}

// A summary of the tag pipeline's threads, shares of 1000 ns lifetimes.
profile::ProfileSummary tag_threads(uint64_t infer_compute, uint64_t infer_wait, uint64_t dec_compute,
                                    uint64_t dec_wait) {
  profile::ProfileSummary s;
  auto thread = [](const std::string& name, uint64_t compute, uint64_t wait) {
    profile::ThreadSummary t;
    t.name = name;
    t.split[Activity::compute] = compute;
    t.split[Activity::wait_lock] = wait;
    t.split[Activity::idle] = 1000 - compute - wait;
    return t;
  };
  s.threads = {thread("inference", infer_compute, infer_wait), thread("decoder-0", dec_compute, dec_wait),
               thread("decoder-1", dec_compute, dec_wait), thread("writer", 10, 980)};
  for (const auto& t : s.threads) s.overall += t.split;
  s.stages = {make_stage("decode", 10, 1000)};
  return s;
}

TEST(ProfileVerdict, TagPipelineNamesTheLimitingStage) {
  const std::string decoders = tandem::pipeline::tag_profile_verdict(tag_threads(290, 710, 950, 0), {false, false});
  EXPECT_NE(decoders.find("waited 71% of the run for batches"), std::string::npos) << decoders;
  EXPECT_NE(decoders.find("decoders are the limit"), std::string::npos) << decoders;
  EXPECT_NE(decoders.find("nvJPEG"), std::string::npos) << decoders;
  const std::string inference = tandem::pipeline::tag_profile_verdict(tag_threads(980, 10, 400, 590), {true, false});
  EXPECT_NE(inference.find("inference is the limit"), std::string::npos) << inference;
  EXPECT_NE(inference.find("waited 59% for free batch slots"), std::string::npos) << inference;
  // On a GPU in fp16: no advice to use fp16; a run spent mostly preparing the model says so.
  profile::ProfileSummary gpu = tag_threads(980, 10, 400, 590);
  EXPECT_EQ(tandem::pipeline::tag_profile_verdict(gpu, {false, true}).find("--precision fp16"), std::string::npos);
  gpu.stages.push_back(make_stage(tandem::pipeline::kPrepareModelZone, 1, 700));
  const std::string short_run = tandem::pipeline::tag_profile_verdict(gpu, {false, true});
  EXPECT_NE(short_run.find("preparing the model"), std::string::npos) << short_run;
  // Decoders the limit with nvJPEG already decoding: no advice to enable it.
  profile::ProfileSummary both = tag_threads(290, 710, 950, 0);
  both.threads.push_back(both.threads[1]);
  both.threads.back().name = "gpu-decoder-0";
  EXPECT_EQ(tandem::pipeline::tag_profile_verdict(both, {false, true}).find("--nvjpeg on"), std::string::npos);
  // Without the tag pipeline's threads: the generic rule.
  profile::ProfileSummary other = tag_threads(1, 0, 1, 0);
  other.threads.resize(0);
  EXPECT_EQ(tandem::pipeline::tag_profile_verdict(other, {true, false}), profile::generic_verdict(other));
}

TEST(ProfileVerdict, GenericNamesTheLargestActivityAndStage) {
  profile::ProfileSummary s;
  EXPECT_NE(profile::generic_verdict(s).find("no zones"), std::string::npos);
  s.stages = {make_stage("Conv big", 4, 700), make_stage("cuda synchronize", 4, 200)};
  s.stages[1].activity = Activity::wait_gpu;
  s.overall[Activity::compute] = 700, s.overall[Activity::wait_gpu] = 200, s.overall[Activity::idle] = 100;
  std::string v = profile::generic_verdict(s);
  EXPECT_NE(v.find("compute in Conv big (78%"), std::string::npos) << v;  // 700 / 900 busy
  s.overall[Activity::wait_gpu] = 900;
  v = profile::generic_verdict(s);
  EXPECT_NE(v.find("limited by the GPU"), std::string::npos) << v;
  EXPECT_NE(v.find("cuda synchronize"), std::string::npos) << v;
}

// Lock waits: full queues point past the waiting threads, empty ones before.
TEST(ProfileVerdict, GenericQueueWaitsNameTheDirection) {
  profile::ProfileSummary s;
  s.stages = {make_stage(profile::kQueueFullZone, 4, 900), make_stage("infer", 4, 300),
              make_stage(profile::kQueueEmptyZone, 4, 100)};
  s.stages[0].activity = s.stages[2].activity = Activity::wait_lock;
  s.overall[Activity::wait_lock] = 1000, s.overall[Activity::compute] = 300;
  std::string v = profile::generic_verdict(s);
  EXPECT_NE(v.find("the stage draining them is the limit: speed up infer"), std::string::npos) << v;
  std::swap(s.stages[0].total_ns, s.stages[2].total_ns);
  v = profile::generic_verdict(s);
  EXPECT_NE(v.find("the stage feeding them is the limit"), std::string::npos) << v;
}

#if defined(TANDEM_PROFILE) && TANDEM_PROFILE
TEST(ProfileOverhead, MeasuresARecordingZoneAndLeavesTracingOff) {
  EXPECT_GT(profile::measure_zone_cost_ns(), 0.0);
  EXPECT_FALSE(profile::is_running());
}

// A real session: every thread's split adds up to its lifetime exactly.
TEST(ProfileSession, ProfileDirSplitCoversEachThread) {
  tandem::testing::TempDir dir("profile_session");
  {
    profile::TraceSession session(profile::SessionOutputs{"", dir.path().string()});
    auto work = [](const std::string& name) {
      TANDEM_THREAD_NAME(name);
      for (int i = 0; i < 50; ++i) {
        TANDEM_ZONE_CAT("work", "");
        { TANDEM_ZONE_CAT("nap", "wait.lock"); }
        { TANDEM_ZONE_CAT("load", "io"); }
      }
    };
    std::thread a(work, "worker-a"), b(work, "worker-b");
    a.join();
    b.join();
  }
  const profile::ProfileSummary s = profile::read_summary(dir.path().string());
  ASSERT_EQ(s.threads.size(), 2u);
  for (const auto& t : s.threads) EXPECT_EQ(t.split.total(), t.end_ns - t.begin_ns) << t.name;
  EXPECT_EQ(stage(s, "work").count, 100u);
  EXPECT_EQ(stage(s, "nap").activity, Activity::wait_lock);
  EXPECT_EQ(stage(s, "load").activity, Activity::io);
  EXPECT_GT(s.overhead.ns_per_event, 0.0);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "summary.txt"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "trace.json"));
}
#endif

}  // namespace

namespace tandem {
namespace {

// Counters: min/mean/max/last over every thread's samples, in summary.txt and
// summary.json (read back by profile-diff).
TEST(ProfileSummary, CountersMinMeanMaxLast) {
  profile::Trace t;
  t.begin_ns = 0, t.end_ns = 100;
  t.counter_names = {"queue depth", "never sampled"};
  profile::Track a, b;
  a.tid = 1, b.tid = 2;
  a.counters = {{10, 4, 0}, {50, 2, 0}};
  b.counters = {{30, 9, 0}};
  t.tracks = {a, b};
  const profile::ProfileSummary s = profile::summarize(t);
  ASSERT_EQ(s.counters.size(), 1u);
  EXPECT_EQ(s.counters[0].name, "queue depth");
  EXPECT_EQ(s.counters[0].samples, 3u);
  EXPECT_DOUBLE_EQ(s.counters[0].min, 2);
  EXPECT_DOUBLE_EQ(s.counters[0].mean, 5);
  EXPECT_DOUBLE_EQ(s.counters[0].max, 9);
  EXPECT_DOUBLE_EQ(s.counters[0].last, 2);  // t=50 is the latest sample
  EXPECT_NE(profile::format_summary(s).find("queue depth"), std::string::npos);
  const profile::ProfileSummary back = profile::summary_from_json(profile::summary_to_json(s), "mem");
  ASSERT_EQ(back.counters.size(), 1u);
  EXPECT_DOUBLE_EQ(back.counters[0].max, 9);
}

// The memory sampler's counters go on the session thread's row.
TEST(ProfileSummary, MemorySamplesBecomeCountersOnTheSessionThread) {
  EXPECT_GT(profile::host_resident_bytes(), 0u);  // Linux: /proc/self/statm
  profile::Trace t;
  t.begin_ns = 100, t.end_ns = 1000;
  profile::Track main;
  main.tid = 1, main.os_tid = 77;
  t.tracks = {main};
  std::vector<profile::MemorySample> samples = {{50, 1 << 20, 0, false},  // before the trace: dropped
                                                {200, 2 << 20, 3 << 20, true},
                                                {900, 4 << 20, 1 << 20, true}};
  profile::add_memory_counters(t, samples, 77);
  ASSERT_EQ(t.tracks.size(), 1u);
  ASSERT_EQ(t.tracks[0].counters.size(), 4u);
  const profile::ProfileSummary s = profile::summarize(t);
  ASSERT_EQ(s.counters.size(), 2u);
  EXPECT_EQ(s.counters[0].name, profile::kHostMemoryCounter);
  EXPECT_DOUBLE_EQ(s.counters[0].max, 4);
  EXPECT_EQ(s.counters[1].name, profile::kDeviceMemoryCounter);
  EXPECT_DOUBLE_EQ(s.counters[1].max, 3);
  EXPECT_DOUBLE_EQ(s.counters[1].last, 1);
  profile::add_memory_counters(t, samples, 12345);  // a thread with no row: a "process" row
  EXPECT_EQ(t.tracks.back().name, "process");
}

}  // namespace
}  // namespace tandem
