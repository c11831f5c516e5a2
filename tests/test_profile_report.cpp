// report.html's data (profile/report_html.h) on hand-built traces. References:
// the activity of each 100 ns bin and the zones kept, worked out by hand in
// the comments; names read back through nlohmann::json.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "profile/report_html.h"

namespace profile = tandem::profile;
using nlohmann::json;

namespace {

// Wall [0, 1000] ns.
//  thread 1: run [0,400] compute > sync [100,300] wait.gpu; a counter at 1000
//  thread 2: read [200,500] io; wait [600,900] wait.queue
profile::Trace two_threads() {
  profile::Trace t;
  t.begin_ns = 0;
  t.end_ns = 1000;
  t.locations = {{"run", "", 1, "graph"}, {"sync", "", 2, "wait.gpu"}, {"read", "", 3, "io"},
                 {"wait", "", 4, "wait.queue"}};
  t.counter_names = {"n"};
  profile::Track a;
  a.tid = 1;
  a.name = "main";
  a.zones = {{0, 400, 0, 0}, {100, 300, 1, 1}};
  a.counters = {{1000, 1.0, 0}};
  profile::Track b;
  b.tid = 2;
  b.name = "reader";
  b.zones = {{200, 500, 2, 0}, {600, 900, 3, 0}};
  profile::Track empty;  // no events: no lane
  empty.tid = 3;
  t.tracks = {a, b, empty};
  return t;
}

json data_of(const profile::Trace& t, const profile::ReportOptions& o = {}) {
  return json::parse(profile::report_data(t, profile::summarize(t), o));
}

TEST(ProfileReport, StripBinsTheInnermostActivity) {
  profile::ReportOptions o;
  o.strip_bins = 10;
  const json d = data_of(two_threads(), o);
  EXPECT_EQ(d["strip"]["bin_ns"], 100);
  // Per bin {compute, wait_gpu, io, wait_lock, idle}: thread 1 is compute in
  // bins 0 and 3, wait GPU in 1-2, idle in 4-9; thread 2 (alive [200,900]) is
  // I/O in 2-4, idle in 5, lock/queue in 6-8.
  const std::vector<std::vector<uint64_t>> want = {
      {100, 0, 0, 0, 0},   {0, 100, 0, 0, 0}, {0, 100, 100, 0, 0}, {100, 0, 100, 0, 0}, {0, 0, 100, 0, 100},
      {0, 0, 0, 0, 200},   {0, 0, 0, 100, 100}, {0, 0, 0, 100, 100}, {0, 0, 0, 100, 100}, {0, 0, 0, 0, 100}};
  EXPECT_EQ(d["strip"]["ns"].get<std::vector<std::vector<uint64_t>>>(), want);
}

TEST(ProfileReport, OneThreadTrackPerThreadWithEvents) {
  const json d = data_of(two_threads());
  ASSERT_EQ(d["tracks"].size(), 2u);
  EXPECT_EQ(d["tracks"][0]["kind"], "thread");
  EXPECT_EQ(d["tracks"][0]["name"], "main");
  EXPECT_EQ(d["tracks"][0]["end_ns"], 1000);  // the counter sample ends its lifetime
  EXPECT_EQ(d["tracks"][1]["begin_ns"], 200);
  EXPECT_EQ(d["tracks"][0]["zones"]["depth"], json::array({0, 1}));
  EXPECT_EQ(d["location_activity"], json::array({0, 1, 2, 3}));  // classify.h's order
  EXPECT_EQ(d["zones_kept"], 4);
  EXPECT_EQ(d["summary"]["threads"].size(), 2u);
}

TEST(ProfileReport, KeepsTheLongestZonesUnderTheCap) {
  // Durations 50, 10, 30, 30, 20, 30 on one thread: a cap of 3 keeps the 50
  // and the earliest two of the three 30s (at 100 and 200).
  profile::Trace t;
  t.end_ns = 1000;
  t.locations = {{"z", "", 1, ""}};
  profile::Track track;
  track.tid = 1;
  track.zones = {{0, 50, 0, 0}, {60, 70, 0, 0}, {100, 130, 0, 0}, {200, 230, 0, 0}, {300, 320, 0, 0},
                 {400, 430, 0, 0}};
  t.tracks = {track};
  profile::ReportOptions o;
  o.zone_cap = 3;
  const json d = data_of(t, o);
  EXPECT_EQ(d["zones_total"], 6);
  EXPECT_EQ(d["zones_kept"], 3);
  EXPECT_EQ(d["min_kept_ns"], 30);
  EXPECT_EQ(d["tracks"][0]["zones"]["begin"], json::array({0, 100, 200}));
  EXPECT_EQ(d["tracks"][0]["zones"]["dur"], json::array({50, 30, 30}));
}

TEST(ProfileReport, NamesCannotCloseTheScriptTag) {
  profile::Trace t = two_threads();
  t.locations[0].name = "</script><script>alert(1)</script>";
  const std::string text = profile::report_data(t, profile::summarize(t));
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(json::parse(text)["names"][0], t.locations[0].name);
  const std::string page = profile::report_html(t, profile::summarize(t));
  EXPECT_EQ(page.find("alert(1)</script>"), std::string::npos);
}

}  // namespace
