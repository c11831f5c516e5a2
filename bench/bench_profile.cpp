// Cost of tracing zones and counters: recording, compiled in but idle, and
// the peer they are measured against in the same run, an empty loop of the
// same shape (benchmark::ClobberMemory in the body, as in the zone loops).
// Targets: a recording zone <= 50 ns, an idle zone ~1 ns over the empty loop.
//
//   build/bench/bench_profile --benchmark_min_time=0.5
//
// Zones are compiled in here whatever the CMake option TANDEM_PROFILE says.
#undef TANDEM_PROFILE
#define TANDEM_PROFILE 1

#include <benchmark/benchmark.h>

#include "profile/clock.h"
#include "profile/tracer.h"

namespace profile = tandem::profile;

namespace {

// Restart the session this often so the thread's buffer never reaches its cap
// (a restart rewinds it; no allocation after the first pass).
constexpr int64_t kZonesPerSession = int64_t(1) << 20;

// Reported as "zone=<time>": the time per zone (the iteration time divided by
// the zones in one iteration), what the summary's overhead line multiplies.
void report_per_zone(benchmark::State& state, int zones_per_iteration) {
  state.counters["zone"] = benchmark::Counter(double(state.iterations()) * zones_per_iteration,
                                              benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Starts a session whose chunks are already taken and touched: a first pass
// of kZonesPerSession zones, discarded, so page faults of fresh chunks are
// not timed as zone cost.
void start_warm() {
  profile::start();
  for (int64_t i = 0; i < kZonesPerSession; ++i) {
    TANDEM_ZONE("warm-up");
    benchmark::ClobberMemory();
  }
  profile::stop();
  profile::start();
}

void BM_EmptyLoop(benchmark::State& state) {
  for (auto _ : state) benchmark::ClobberMemory();
}
BENCHMARK(BM_EmptyLoop);

void BM_ZoneIdle(benchmark::State& state) {
  profile::stop();
  for (auto _ : state) {
    TANDEM_ZONE("idle");
    benchmark::ClobberMemory();
  }
  report_per_zone(state, 1);
}
BENCHMARK(BM_ZoneIdle);

void BM_ZoneRecording(benchmark::State& state) {
  int64_t n = 0;
  start_warm();
  for (auto _ : state) {
    {
      TANDEM_ZONE("recording");
      benchmark::ClobberMemory();
    }
    if (++n == kZonesPerSession) {
      state.PauseTiming();
      profile::stop();
      profile::start();
      n = 0;
      state.ResumeTiming();
    }
  }
  profile::stop();
  const auto trace = profile::collect();
  state.counters["dropped"] = double(trace.tracks.empty() ? 0 : trace.tracks[0].dropped_zones);
  report_per_zone(state, 1);
}
BENCHMARK(BM_ZoneRecording);

// Two levels per iteration: cost per zone is half the time shown ("zone").
void BM_ZoneRecordingNested2(benchmark::State& state) {
  int64_t n = 0;
  start_warm();
  for (auto _ : state) {
    {
      TANDEM_ZONE("outer");
      TANDEM_ZONE("inner");
      benchmark::ClobberMemory();
    }
    if ((n += 2) >= kZonesPerSession) {
      state.PauseTiming();
      profile::stop();
      profile::start();
      n = 0;
      state.ResumeTiming();
    }
  }
  profile::stop();
  report_per_zone(state, 2);
}
BENCHMARK(BM_ZoneRecordingNested2);

void BM_CounterRecording(benchmark::State& state) {
  int64_t n = 0;
  profile::start();
  for (auto _ : state) {
    TANDEM_COUNTER("bench counter", n);
    if (++n == kZonesPerSession) {
      state.PauseTiming();
      profile::stop();
      profile::start();
      n = 0;
      state.ResumeTiming();
    }
  }
  profile::stop();
}
BENCHMARK(BM_CounterRecording);

// The zone's two clock reads, for reference.
void BM_Ticks(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(profile::ticks());
}
BENCHMARK(BM_Ticks);

void BM_NowNs(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(profile::now_ns());
}
BENCHMARK(BM_NowNs);

}  // namespace

BENCHMARK_MAIN();
