// The verdict of `tandem train --profile` (train/train_profile.h) on
// hand-built summaries: each limit named, with its advice.
#include <gtest/gtest.h>

#include "train/train_profile.h"

namespace {

using tandem::profile::Activity;
using tandem::profile::ProfileSummary;
using tandem::train::train_profile_verdict;
using tandem::train::TrainRunFacts;

tandem::profile::StageSummary stage(const std::string& name, uint64_t count, uint64_t total) {
  tandem::profile::StageSummary st;
  st.name = name;
  st.count = count;
  st.total_ns = st.self_ns = total;
  st.mean_ns = total / count;
  return st;
}

// The training thread's split over 1,000,000 ns, a loader thread waiting on
// its full queue nearly all the time, and 100 steps.
ProfileSummary run(uint64_t compute, uint64_t wait_gpu, uint64_t data_wait) {
  ProfileSummary s;
  tandem::profile::ThreadSummary main, loader;
  main.name = "main";
  main.split[Activity::compute] = compute;
  main.split[Activity::wait_gpu] = wait_gpu;
  main.split[Activity::idle] = 1'000'000 - compute - wait_gpu;
  loader.name = "loader-0";
  loader.split[Activity::compute] = 50'000;
  loader.split[Activity::wait_lock] = 950'000;
  s.threads = {main, loader};
  for (const auto& t : s.threads) s.overall += t.split;
  s.stages = {stage("forward", 100, compute / 2), stage("backward", 100, compute / 2),
              stage("queue full (push waits)", 100, 950'000), stage("data wait", 100, data_wait)};
  return s;
}

TEST(TrainVerdict, FullLoaderQueuesDoNotBlameTheLoader) {
  // The case the generic rule got wrong: loaders blocked on full queues are
  // the most time, yet the training thread is the limit.
  ProfileSummary s = run(800'000, 50'000, 10'000);
  s.gpu.present = true;
  s.gpu.span_ns = 1'000'000;
  s.gpu.time.kernels_ns = 300'000;
  const std::string v = train_profile_verdict(s, TrainRunFacts{"main", true, false});
  EXPECT_NE(v.find("issuing the GPU's work"), std::string::npos) << v;
  EXPECT_NE(v.find("GPU was busy 30%"), std::string::npos) << v;
  EXPECT_NE(v.find("forward 4 us"), std::string::npos) << v;  // 400,000 ns over 100 steps
  EXPECT_EQ(v.find("loader"), std::string::npos) << v;
}

TEST(TrainVerdict, NamesTheGpuDataAndCpuLimits) {
  const std::string gpu =
      train_profile_verdict(run(200'000, 700'000, 10'000), TrainRunFacts{"main", true, false});
  EXPECT_NE(gpu.find("limited by the GPU"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("--precision fp16"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("not recorded"), std::string::npos) << gpu;  // no CUPTI data
  const std::string gpu16 =
      train_profile_verdict(run(200'000, 700'000, 10'000), TrainRunFacts{"main", true, true});
  EXPECT_EQ(gpu16.find("--precision"), std::string::npos) << gpu16;
  const std::string data =
      train_profile_verdict(run(600'000, 0, 300'000), TrainRunFacts{"main", false, false});
  EXPECT_NE(data.find("limited by data loading"), std::string::npos) << data;
  EXPECT_NE(data.find("50%"), std::string::npos) << data;  // 300,000 of 600,000 busy
  const std::string cpu =
      train_profile_verdict(run(900'000, 0, 10'000), TrainRunFacts{"main", false, false});
  EXPECT_NE(cpu.find("limited by CPU compute"), std::string::npos) << cpu;
}

TEST(TrainVerdict, ShortRunsAndForeignProfiles) {
  ProfileSummary s = run(800'000, 50'000, 10'000);
  s.stages.push_back(stage("cudnn algorithm search", 4, 500'000));
  const std::string v = train_profile_verdict(s, TrainRunFacts{"main", true, false});
  EXPECT_NE(v.find("one-off setup"), std::string::npos) << v;
  // No thread of that name: the generic rule.
  EXPECT_EQ(train_profile_verdict(s, TrainRunFacts{"trainer", true, false}),
            tandem::profile::generic_verdict(s));
}

}  // namespace
