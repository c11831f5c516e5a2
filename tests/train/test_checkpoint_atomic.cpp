// A checkpoint writer killed (SIGKILL) in the middle of a save never leaves a
// half-written checkpoint: the file at the path still loads, whole.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "tests/temp_dir.h"
#include "train/checkpoint.h"

namespace tandem::train {
namespace {

constexpr int64_t kElements = int64_t(4) << 20;  // 16 MiB: a save takes a while

Parameter filled(float v) {
  Parameter p{"big.weight", Tensor::empty(DType::f32, {kElements}), Tensor::zeros(DType::f32, {kElements})};
  std::fill_n(p.value.data<float>(), kElements, v);
  return p;
}

// A state of just `p`, at iteration `step`.
TrainingState holding(Parameter& p, int64_t step = 0) {
  TrainingState s;
  s.params = {&p};
  s.step = step;
  return s;
}

// True once a temp file of `pid`'s save exists in `dir` (the writer is inside
// write_file_atomically).
bool writer_busy(const std::filesystem::path& dir, pid_t pid) {
  std::string mark = ".tandem-" + std::to_string(pid) + "-";
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find(mark) != std::string::npos) return true;
  return false;
}

// Waits (bounded) until the child is mid-save; false if it never got there.
bool wait_until_busy(const std::filesystem::path& dir, pid_t child) {
  for (int i = 0; i < 100000; ++i) {
    if (writer_busy(dir, child)) return true;
    if (waitpid(child, nullptr, WNOHANG) == child) return false;
    usleep(200);
  }
  return false;
}

TEST(CheckpointAtomic, WriterKilledMidSaveLeavesAWholeCheckpoint) {
  testing::TempDir dir("ckpt_atomic");
  const std::string path = dir.file("big.ckpt");
  Parameter old_value = filled(1.0f);
  save_checkpoint(path, holding(old_value));

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Parameter new_value = filled(2.0f);
    for (int64_t step = 1;; ++step) {
      save_checkpoint(path, holding(new_value, step));
    }
  }
  bool busy = wait_until_busy(dir.path(), child);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(busy) << "the writer never started a save";
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  Parameter loaded = filled(0.0f);
  TrainingState s = holding(loaded);
  ASSERT_NO_THROW(load_checkpoint(path, s));
  // Either the old checkpoint (step 0, ones) or one of the child's whole ones.
  const float want = s.step == 0 ? 1.0f : 2.0f;
  const float* v = loaded.value.data<float>();
  EXPECT_EQ(std::count(v, v + kElements, want), kElements) << "checkpoint of step " << s.step;

  // A temp file the killed writer may have left does not get in the way.
  save_checkpoint(path, holding(old_value));
  load_checkpoint(path, s);
  EXPECT_EQ(s.step, 0);
  EXPECT_EQ(loaded.value.data<float>()[kElements - 1], 1.0f);
}

}  // namespace
}  // namespace tandem::train
