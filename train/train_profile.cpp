#include "train/train_profile.h"

#include <fmt/core.h>

#include "profile/summary_io.h"
#include "train/data/data_loader.h"

namespace tandem::train {
namespace {

using profile::Activity;

double pct(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * double(part) / double(whole);
}

// "forward 412 us, backward 455 us, ..." per step (the zones' means).
std::string per_step(const profile::ProfileSummary& s) {
  std::string out;
  for (const char* name : {"forward", "backward", "gradient norm", "optimizer"}) {
    const profile::StageSummary* st = profile::find_stage(s, name);
    if (!st || st->count == 0) continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name,
                       profile::format_duration(st->mean_ns));
  }
  return out.empty() ? "no steps recorded" : out;
}

// One-off work the first steps pay: cuDNN's algorithm search, the split's
// tuning, the GPU context.
uint64_t setup_ns(const profile::ProfileSummary& s) {
  return profile::stage_total(s, "cudnn algorithm search") + profile::stage_total(s, "split tune") +
         profile::stage_total(s, "create CUDA context + cuDNN/cuBLASLt handles");
}

std::string gpu_verdict(const profile::ProfileSummary& s, const profile::TimeSplit& t,
                        uint64_t busy, const TrainRunFacts& f) {
  const std::string gpu_busy =
      s.gpu.present && s.gpu.span_ns > 0
          ? fmt::format("{:.0f}%", pct(s.gpu.time.busy_ns(), s.gpu.span_ns))
          : "not recorded";
  if (t[Activity::wait_gpu] >= t[Activity::compute])
    return fmt::format(
        "limited by the GPU: the training thread waited for it {:.0f}% of its busy time (GPU busy "
        "{} "
        "of the run; per step {}): {}",
        pct(t[Activity::wait_gpu], busy), gpu_busy, per_step(s),
        f.low_precision ? "a larger --batch" : "--precision fp16 or bf16, or a larger --batch");
  return fmt::format(
      "limited by the training thread issuing the GPU's work: {:.0f}% of its busy time on the host "
      "(per step {}) while the GPU was busy {} of the run: the steps are launch-bound; a larger "
      "--batch does more per launch",
      pct(t[Activity::compute], busy), per_step(s), gpu_busy);
}

}  // namespace

std::string train_profile_verdict(const profile::ProfileSummary& s, const TrainRunFacts& f) {
  const profile::ThreadGroup trainer = profile::thread_group(s, f.thread);
  if (trainer.threads == 0) return profile::generic_verdict(s);
  const profile::TimeSplit& t = trainer.split;
  const uint64_t busy = t.total() - t[Activity::idle];
  const uint64_t setup = setup_ns(s);
  if (setup * 2 > busy)
    return fmt::format(
        "a run this short is dominated by one-off setup: {:.2f} s of the training thread's {:.2f} "
        "s "
        "busy (cuDNN algorithm search, split tuning, the GPU context): train longer to see the "
        "steps",
        double(setup) / 1e9, double(busy) / 1e9);
  const uint64_t data_wait = profile::stage_total(s, "data wait");
  if (data_wait * 4 > busy) {
    const profile::ThreadGroup loaders = profile::thread_group(s, kLoaderThreadPrefix);
    return fmt::format(
        "limited by data loading: the training thread waited for batches {:.0f}% of its busy time, "
        "{} loader threads computing {:.0f}% of theirs: more --workers, or lighter augmentation",
        pct(data_wait, busy), loaders.threads, 100.0 * loaders.share(Activity::compute));
  }
  if (f.on_gpu) return gpu_verdict(s, t, busy, f);
  return fmt::format(
      "limited by CPU compute in the training step ({:.0f}% of the training thread's busy time; "
      "per "
      "step {}): more --threads, --precision bf16 on a CPU with bf16 instructions, or a GPU "
      "(--device cuda)",
      pct(t[Activity::compute], busy), per_step(s));
}

}  // namespace tandem::train
