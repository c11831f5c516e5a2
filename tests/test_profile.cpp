// Tracer tests. References: the zone/counter structure each test records,
// written out in the test (expected names, depths, counts, values: exact), and
// the Chrome Trace Event Format rules (checked by validate_chrome_trace below).
// Timestamps are compared only for order and containment, never for length.
//
// The tracer is tested with its macros compiled in even in a build with the
// CMake option TANDEM_PROFILE=OFF (test_profile_off.cpp tests them compiled out).
#undef TANDEM_PROFILE
#define TANDEM_PROFILE 1

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "profile/chrome_trace.h"
#include "profile/session.h"
#include "profile/tracer.h"

namespace profile = tandem::profile;
using nlohmann::json;

namespace {

// Each test starts its own session; make sure a failed one does not leave
// tracing on for the next.
class Profile : public ::testing::Test {
 protected:
  void TearDown() override { profile::stop(); }
};

const profile::Track* find_track(const profile::Trace& trace, const std::string& name) {
  for (const auto& t : trace.tracks)
    if (t.name == name) return &t;
  return nullptr;
}

// The track of the calling thread is the one whose tid it was given; tests
// that record on the main thread name it so they can find it.
const profile::Track& main_track(const profile::Trace& trace) {
  const profile::Track* t = find_track(trace, "gtest-main");
  if (t == nullptr) throw std::runtime_error("main thread track missing");
  return *t;
}

std::string zone_name(const profile::Trace& trace, const profile::ZoneRecord& z) {
  return trace.locations.at(z.location).name;
}

// One iteration of the pattern the threaded test records: depths 0 1 2 1.
void record_pattern() {
  TANDEM_ZONE("outer");
  {
    TANDEM_ZONE_CAT("inner", "test");
    TANDEM_ZONE("leaf");
  }
  TANDEM_ZONE("inner2");
}

// Checks that each zone lies within its parent (nearest earlier zone one
// level up) and after its previous sibling. Returns "" or what is wrong.
std::string check_nesting(const profile::Track& track) {
  std::vector<const profile::ZoneRecord*> open;  // open[d] = innermost zone at depth d
  for (const auto& z : track.zones) {
    if (z.end_ns < z.begin_ns) return "zone ends before it begins";
    if (z.depth > open.size()) return "depth jumps by more than one";
    if (z.depth > 0) {
      const auto* parent = open[z.depth - 1];
      if (z.begin_ns < parent->begin_ns || z.end_ns > parent->end_ns) return "child outside parent";
    }
    if (z.depth < open.size() && z.begin_ns < open[z.depth]->end_ns)
      return "overlaps previous sibling";
    open.resize(z.depth);
    open.push_back(&z);
  }
  return "";
}

TEST_F(Profile, NestedZonesFromThreadsArePerThreadAndNested) {
  constexpr int kThreads = 3, kIterations = 5;
  profile::start();
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([i] {
      TANDEM_THREAD_NAME("worker-" + std::to_string(i));
      for (int k = 0; k < kIterations; ++k) record_pattern();
    });
  }
  for (auto& t : threads) t.join();  // exited threads must still be collected
  profile::stop();
  const profile::Trace trace = profile::collect();

  const std::vector<std::string> names = {"outer", "inner", "leaf", "inner2"};
  const std::vector<uint32_t> depths = {0, 1, 2, 1};
  std::vector<uint32_t> tids;
  for (int i = 0; i < kThreads; ++i) {
    const profile::Track* t = find_track(trace, "worker-" + std::to_string(i));
    ASSERT_NE(t, nullptr) << "worker-" << i;
    tids.push_back(t->tid);
    EXPECT_EQ(t->pid, 1u);
    ASSERT_EQ(t->zones.size(), size_t(kIterations * 4));
    for (size_t j = 0; j < t->zones.size(); ++j) {
      EXPECT_EQ(zone_name(trace, t->zones[j]), names[j % 4]) << j;
      EXPECT_EQ(t->zones[j].depth, depths[j % 4]) << j;
    }
    EXPECT_EQ(check_nesting(*t), "") << "worker-" << i;
    EXPECT_EQ(t->dropped_zones, 0u);
  }
  std::sort(tids.begin(), tids.end());
  EXPECT_EQ(std::unique(tids.begin(), tids.end()), tids.end()) << "tids must differ";
  const auto& inner = trace.locations.at(find_track(trace, "worker-0")->zones[1].location);
  EXPECT_EQ(inner.category, "test");
  EXPECT_NE(inner.file.find("test_profile.cpp"), std::string::npos);
  EXPECT_GT(inner.line, 0u);
}

TEST_F(Profile, CollectWhileThreadsRecordGivesConsistentSnapshots) {
  // Snapshots taken while two threads record (crossing chunk boundaries, up
  // to the cap) must each be a well-nested, growing prefix of their events.
  std::atomic<bool> done{false};
  std::atomic<int> started{0};
  profile::Options options;
  options.max_zones_per_thread = uint64_t(1) << 17;  // 2 chunks
  profile::start(options);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([i, &done, &started] {
      TANDEM_THREAD_NAME("busy-" + std::to_string(i));
      record_pattern();
      started++;
      while (!done.load()) record_pattern();
    });
  }
  while (started.load() < 2) std::this_thread::yield();
  size_t last = 0;
  for (int snapshot = 0; snapshot < 10; ++snapshot) {
    const profile::Trace trace = profile::collect();
    const profile::Track* t = find_track(trace, "busy-0");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(check_nesting(*t), "") << "snapshot " << snapshot;
    EXPECT_GE(t->zones.size(), std::max<size_t>(last, 4));
    last = t->zones.size();
  }
  done = true;
  for (auto& t : threads) t.join();
  profile::stop();
}

TEST_F(Profile, DisabledTracingRecordsNothing) {
  TANDEM_THREAD_NAME("gtest-main");
  profile::start();
  { TANDEM_ZONE("before stop"); }
  profile::stop();
  EXPECT_FALSE(profile::is_running());
  { TANDEM_ZONE("while stopped"); }
  TANDEM_COUNTER("while stopped", 1);
  const profile::Trace trace = profile::collect();
  const auto& t = main_track(trace);
  ASSERT_EQ(t.zones.size(), 1u);
  EXPECT_EQ(zone_name(trace, t.zones[0]), "before stop");
  EXPECT_TRUE(t.counters.empty());

  // A new session discards the last one's events.
  profile::start();
  profile::stop();
  EXPECT_EQ(find_track(profile::collect(), "gtest-main"), nullptr);
}

TEST_F(Profile, StartWhileRunningThrows) {
  profile::start();
  EXPECT_THROW(profile::start(), tandem::Error);
}

TEST_F(Profile, CapCountsDroppedEvents) {
  TANDEM_THREAD_NAME("gtest-main");
  profile::Options options;
  options.max_zones_per_thread = 1000;
  options.max_counters_per_thread = 10;
  profile::start(options);
  for (int i = 0; i < 1500; ++i) {
    TANDEM_ZONE("capped");
  }
  for (int i = 0; i < 15; ++i) TANDEM_COUNTER("capped", i);
  profile::stop();
  const profile::Trace trace = profile::collect();
  const auto& t = main_track(trace);
  EXPECT_EQ(t.zones.size(), 1000u);
  EXPECT_EQ(t.dropped_zones, 500u);
  ASSERT_EQ(t.counters.size(), 10u);
  EXPECT_EQ(t.counters.back().value, 9.0);  // the first ten are kept
  EXPECT_EQ(t.dropped_counters, 5u);
}

TEST_F(Profile, CapInSecondChunkAndChunkCrossing) {
  // 2 full 64K chunks + part of a third, cap inside the third.
  TANDEM_THREAD_NAME("gtest-main");
  constexpr uint64_t kChunk = profile::detail::kChunkEvents;
  profile::Options options;
  options.max_zones_per_thread = 2 * kChunk + 7;
  profile::start(options);
  for (uint64_t i = 0; i < 2 * kChunk + 100; ++i) {
    TANDEM_ZONE("many");
  }
  profile::stop();
  const profile::Trace trace = profile::collect();
  const auto& t = main_track(trace);
  ASSERT_EQ(t.zones.size(), 2 * kChunk + 7);
  EXPECT_EQ(t.dropped_zones, 93u);
  for (size_t i = 1; i < t.zones.size(); ++i)
    ASSERT_GE(t.zones[i].begin_ns, t.zones[i - 1].end_ns) << i;  // sequential, in order
}

TEST_F(Profile, CountersAreRecordedInOrder) {
  TANDEM_THREAD_NAME("gtest-main");
  profile::start();
  for (int i = 0; i < 10; ++i) TANDEM_COUNTER("queue depth", i * 0.5);
  TANDEM_COUNTER("queue depth", -3);  // a second site, same counter
  TANDEM_COUNTER("other", 7);
  profile::stop();
  const profile::Trace trace = profile::collect();
  const auto& t = main_track(trace);
  ASSERT_EQ(t.counters.size(), 12u);
  ASSERT_EQ(trace.counter_names.size(), 2u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(trace.counter_names[t.counters[i].counter], "queue depth");
    EXPECT_EQ(t.counters[i].value, i * 0.5);
    if (i > 0) {
      EXPECT_GE(t.counters[i].ts_ns, t.counters[i - 1].ts_ns);
    }
  }
  EXPECT_EQ(t.counters[10].counter, t.counters[0].counter);
  EXPECT_EQ(t.counters[10].value, -3.0);
  EXPECT_EQ(trace.counter_names[t.counters[11].counter], "other");
}

TEST_F(Profile, OpenZoneEndsAtCollect) {
  TANDEM_THREAD_NAME("gtest-main");
  profile::start();
  TANDEM_ZONE("still open");
  { TANDEM_ZONE("closed"); }
  const profile::Trace trace = profile::collect();
  const auto& t = main_track(trace);
  ASSERT_EQ(t.zones.size(), 2u);
  EXPECT_EQ(t.zones[0].end_ns, trace.end_ns);
  EXPECT_EQ(check_nesting(t), "");
  EXPECT_LE(trace.begin_ns, t.zones[0].begin_ns);
}

TEST_F(Profile, ZoneOpenAcrossRestartDoesNotWriteNewSession) {
  TANDEM_THREAD_NAME("gtest-main");
  profile::start();
  {
    TANDEM_ZONE("old session");  // its slot is reused by "new session"
    profile::stop();
    profile::start();
    { TANDEM_ZONE("new session"); }
    { TANDEM_ZONE("between"); }
  }  // "old session" ends here: it must not write its end into "new session"
  { TANDEM_ZONE("after"); }
  profile::stop();
  const profile::Trace trace = profile::collect();
  const auto& t = main_track(trace);
  ASSERT_EQ(t.zones.size(), 3u);
  EXPECT_EQ(zone_name(trace, t.zones[0]), "new session");
  for (const auto& z : t.zones) EXPECT_EQ(z.depth, 0u);
  EXPECT_LE(t.zones[0].end_ns, t.zones[1].begin_ns);
  EXPECT_EQ(check_nesting(t), "");
}

// --- Chrome Trace Event Format -------------------------------------------

// ts/dur in µs as written (three decimals) back to integer ns.
int64_t to_ns(const json& us) { return std::llround(us.get<double>() * 1000.0); }

// The format's rules for the event kinds we write (Trace Event Format doc:
// X needs name, ph, ts, dur, pid, tid; M thread_name/process_name carry
// args.name; C carries numeric args), plus what a viewer needs to draw X
// events as a tree: on each (pid, tid) any two X events are disjoint or one
// contains the other. Returns "" or the first violation.
std::string validate_chrome_trace(const json& doc) {
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    return "no traceEvents array";
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>> spans;
  for (const json& e : doc["traceEvents"]) {
    if (!e.contains("ph") || !e["ph"].is_string()) return "event without ph: " + e.dump();
    if (!e.contains("pid") || !e["pid"].is_number_integer()) return "no pid: " + e.dump();
    if (!e.contains("tid") || !e["tid"].is_number_integer()) return "no tid: " + e.dump();
    if (!e.contains("name") || !e["name"].is_string()) return "no name: " + e.dump();
    const std::string ph = e["ph"];
    if (ph == "X") {
      if (!e.contains("ts") || !e["ts"].is_number()) return "X without ts: " + e.dump();
      if (!e.contains("dur") || !e["dur"].is_number()) return "X without dur: " + e.dump();
      if (e["ts"].get<double>() < 0 || e["dur"].get<double>() < 0) return "negative: " + e.dump();
      spans[{e["pid"], e["tid"]}].push_back({to_ns(e["ts"]), to_ns(e["ts"]) + to_ns(e["dur"])});
    } else if (ph == "M") {
      if (!e.contains("args") || !e["args"].contains("name") || !e["args"]["name"].is_string())
        return "M without args.name: " + e.dump();
    } else if (ph == "C") {
      if (!e.contains("ts") || !e["ts"].is_number()) return "C without ts: " + e.dump();
      if (!e.contains("args") || !e["args"].is_object() || e["args"].empty())
        return "C without args: " + e.dump();
      for (const auto& [key, v] : e["args"].items())
        if (!v.is_number()) return "C arg not a number: " + e.dump();
    } else {
      return "unexpected ph " + ph;
    }
  }
  for (auto& [thread, list] : spans) {
    // Parents first: by begin, then longer first.
    std::sort(list.begin(), list.end(), [](auto a, auto b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<int64_t> ends;  // ends of the open ancestors
    for (auto [b, e] : list) {
      while (!ends.empty() && ends.back() <= b) ends.pop_back();
      if (!ends.empty() && e > ends.back()) return "X events overlap without nesting";
      ends.push_back(e);
    }
  }
  return "";
}

std::vector<json> events_of(const json& doc, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : doc["traceEvents"])
    if (e["ph"] == ph) out.push_back(e);
  return out;
}

// A hand-made trace, so the expected JSON numbers are known exactly.
profile::Trace synthetic_trace() {
  profile::Trace t;
  t.begin_ns = 5'000'000;
  t.end_ns = t.begin_ns + 3'000'000;
  t.locations = {{"parent", "a.cpp", 10, "cpu"}, {"child \"quoted\"", "a.cpp", 12, ""}};
  t.counter_names = {"queue"};
  profile::Track track;
  track.tid = 7;
  track.name = "decoder-3";
  track.zones = {{t.begin_ns + 1'234'567, t.begin_ns + 2'234'568, 0, 0},
                 {t.begin_ns + 1'300'000, t.begin_ns + 1'300'001, 1, 1}};
  track.counters = {{t.begin_ns + 42, 2.5, 0}, {t.begin_ns + 43, NAN, 0}};
  track.dropped_zones = 3;
  t.tracks.push_back(track);
  return t;
}

TEST(ChromeTrace, SyntheticTraceHasExactFields) {
  const json doc = json::parse(profile::chrome_trace_json(synthetic_trace()));
  EXPECT_EQ(validate_chrome_trace(doc), "");
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
  EXPECT_EQ(doc["otherData"]["dropped_zones"], 3);
  const auto x = events_of(doc, "X");
  ASSERT_EQ(x.size(), 2u);
  EXPECT_EQ(x[0]["name"], "parent");
  EXPECT_EQ(x[0]["cat"], "cpu");
  EXPECT_EQ(x[0]["pid"], 1);
  EXPECT_EQ(x[0]["tid"], 7);
  EXPECT_EQ(to_ns(x[0]["ts"]), 1'234'567);  // 1234.567 µs
  EXPECT_EQ(to_ns(x[0]["dur"]), 1'000'001);
  EXPECT_EQ(x[1]["name"], "child \"quoted\"");
  EXPECT_FALSE(x[1].contains("cat"));
  EXPECT_EQ(to_ns(x[1]["dur"]), 1);  // 0.001 µs survives
  const auto m = events_of(doc, "M");
  ASSERT_EQ(m.size(), 2u);  // process_name, thread_name
  EXPECT_EQ(m[1]["name"], "thread_name");
  EXPECT_EQ(m[1]["tid"], 7);
  EXPECT_EQ(m[1]["args"]["name"], "decoder-3");
  const auto c = events_of(doc, "C");
  ASSERT_EQ(c.size(), 1u);  // the NaN sample is left out: JSON has no NaN
  EXPECT_EQ(c[0]["name"], "queue");
  EXPECT_EQ(c[0]["args"]["value"], 2.5);
  EXPECT_EQ(to_ns(c[0]["ts"]), 42);
}

TEST(ChromeTrace, ValidatorRejectsBrokenNesting) {
  // The validator itself must be able to fail: two overlapping zones.
  profile::Trace t = synthetic_trace();
  t.tracks[0].zones[1].end_ns = t.tracks[0].zones[0].end_ns + 1;
  EXPECT_NE(validate_chrome_trace(json::parse(profile::chrome_trace_json(t))), "");
}

TEST_F(Profile, RecordedTraceFileIsValidChromeJson) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "tandem_profile_test.json";
  profile::start();
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([i] {
      TANDEM_THREAD_NAME("decoder-" + std::to_string(i));
      for (int k = 0; k < 50; ++k) {
        record_pattern();
        TANDEM_COUNTER("decoded", k);
      }
    });
  }
  for (auto& t : threads) t.join();
  profile::stop();
  profile::write_chrome_trace(profile::collect(), path.string());
  std::ifstream file(path);
  const json doc = json::parse(file);
  EXPECT_EQ(validate_chrome_trace(doc), "");
  EXPECT_EQ(events_of(doc, "X").size(), 2u * 50 * 4);
  EXPECT_EQ(events_of(doc, "C").size(), 2u * 50);
  std::vector<std::string> names;
  for (const json& m : events_of(doc, "M"))
    if (m["name"] == "thread_name") names.push_back(m["args"]["name"]);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"decoder-0", "decoder-1"}));
  std::filesystem::remove(path);
}

TEST(ChromeTrace, UnwritablePathThrowsWithPath) {
  const std::string path = "/nonexistent-dir/trace.json";
  try {
    profile::write_chrome_trace(synthetic_trace(), path);
    FAIL() << "no exception";
  } catch (const tandem::Error& e) {
    EXPECT_EQ(e.context().file, path);
  }
}

// --- Summary and TraceSession -----------------------------------------------

TEST(Summary, TotalAndSelfTimeMatchHandComputation) {
  // parent [0,100] > a [10,30], b [40,90] > a [50,60]; and on another track a [0,5].
  // Reference by hand: parent total 100, self 100-20-50 = 30;
  // a: count 3, total 20+10+5 = 35, self 35; b: total 50, self 50-10 = 40.
  profile::Trace t;
  t.locations = {{"parent", "", 1, ""}, {"a", "", 2, ""}, {"b", "", 3, ""}, {"a", "", 4, ""}};
  profile::Track t1;
  t1.zones = {{0, 100, 0, 0}, {10, 30, 1, 1}, {40, 90, 2, 1}, {50, 60, 3, 2}};
  profile::Track t2;
  t2.zones = {{0, 5, 1, 0}};
  t.tracks = {t1, t2};
  const auto stats = profile::summarize_zones(t);
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[0].name, "b");  // sorted by self time
  EXPECT_EQ(stats[0].total_ns, 50u);
  EXPECT_EQ(stats[0].self_ns, 40u);
  EXPECT_EQ(stats[1].name, "a");
  EXPECT_EQ(stats[1].count, 3u);
  EXPECT_EQ(stats[1].total_ns, 35u);
  EXPECT_EQ(stats[1].self_ns, 35u);
  EXPECT_EQ(stats[2].name, "parent");
  EXPECT_EQ(stats[2].total_ns, 100u);
  EXPECT_EQ(stats[2].self_ns, 30u);
}

TEST_F(Profile, TraceSessionWritesFileAndEmptyPathIsOff) {
  {
    profile::TraceSession off("");
    EXPECT_FALSE(off.active());
    EXPECT_FALSE(profile::is_running());
  }
  const auto path = std::filesystem::path(::testing::TempDir()) / "tandem_session_test.json";
  {
    profile::TraceSession session(path.string());
    EXPECT_TRUE(profile::is_running());
    { TANDEM_ZONE("in session"); }
  }  // the destructor writes
  EXPECT_FALSE(profile::is_running());
  std::ifstream file(path);
  const json doc = json::parse(file);
  EXPECT_EQ(validate_chrome_trace(doc), "");
  const auto x = events_of(doc, "X");
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0]["name"], "in session");
  std::filesystem::remove(path);
}

TEST_F(Profile, TraceSessionFinishReportsWriteErrors) {
  profile::TraceSession session("/nonexistent-dir/trace.json");
  EXPECT_THROW(session.finish(), tandem::Error);
  EXPECT_FALSE(profile::is_running());
  EXPECT_TRUE(session.finish().tracks.empty());  // once only
}

}  // namespace
