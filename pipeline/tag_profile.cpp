#include "pipeline/tag_profile.h"

#include <fmt/core.h>

namespace tandem::pipeline {
namespace {

using profile::Activity;

using Group = profile::ThreadGroup;

double pct(double share) { return 100.0 * share; }

std::string inference_advice(const profile::ProfileSummary& s, const Group& infer, const TagRunFacts& f) {
  // Plan compile and cuDNN's algorithm search count as the inference
  // thread's work, but they are a one-off: a short run is dominated by them.
  const uint64_t prepare = profile::stage_total(s, kPrepareModelZone);
  const uint64_t busy = infer.split[Activity::compute] + infer.split[Activity::wait_gpu];
  if (busy > 0 && prepare * 2 > busy)
    return fmt::format("{:.1f} s of it preparing the model (plan compile, cuDNN algorithm search): a run this short "
                       "is dominated by that one-off cost; the algorithm choices are cached on disk, so the next run "
                       "prepares faster",
                       double(prepare) / 1e9);
  if (f.inference_on_cpu) return "run on a GPU (--device cuda) or a smaller model";
  return f.low_precision ? "try a larger --batch" : "try --precision fp16 or a larger --batch";
}

std::string decoder_advice(const Group& dec, const Group& gpu_dec, const TagRunFacts& f) {
  if (dec.share(Activity::io) > dec.share(Activity::compute)) return "reading files is slow: faster storage";
  if (f.inference_on_cpu) return "more --decoders (they share the cores with inference)";
  if (gpu_dec.threads == 0) return "add --decoders or let the GPU decode too (nvJPEG: --nvjpeg on)";
  return "every core and the GPU's JPEG decoders are decoding; more cores or fewer, smaller photos";
}

}  // namespace

std::string tag_profile_verdict(const profile::ProfileSummary& s, const TagRunFacts& facts) {
  const Group infer = profile::thread_group(s, "inference");
  const Group dec = profile::thread_group(s, "decoder-");
  const Group gpu_dec = profile::thread_group(s, "gpu-decoder-");
  const Group writer = profile::thread_group(s, "writer");
  if (infer.threads == 0 || dec.threads == 0) return profile::generic_verdict(s);
  const double infer_busy = infer.share(Activity::compute) + infer.share(Activity::wait_gpu);
  const double dec_busy = dec.share(Activity::compute) + dec.share(Activity::io);
  const double write_busy = writer.threads ? writer.share(Activity::io) + writer.share(Activity::compute) : 0.0;
  if (write_busy > infer_busy && write_busy > dec_busy)
    return fmt::format("the writer was busy {:.0f}% of the run, inference {:.0f}%, decoders {:.0f}%: writing is the "
                       "limit: put the catalog on a faster disk",
                       pct(write_busy), pct(infer_busy), pct(dec_busy));
  if (infer_busy >= dec_busy) {
    const double gpu_wait = infer.share(Activity::wait_gpu);
    return fmt::format("inference busy {:.0f}% of the run ({:.0f}% of it waiting for the GPU), decoders {:.0f}% "
                       "(waited {:.0f}% for free batch slots): inference is the limit: {}",
                       pct(infer_busy), infer_busy > 0 ? 100.0 * gpu_wait / infer_busy : 0.0, pct(dec_busy),
                       pct(dec.share(Activity::wait_lock)), inference_advice(s, infer, facts));
  }
  return fmt::format("inference thread waited {:.0f}% of the run for batches, decoders busy {:.0f}% ({:.0f}% reading "
                     "files): decoders are the limit: {}",
                     pct(infer.share(Activity::wait_lock)), pct(dec_busy), pct(dec.share(Activity::io)),
                     decoder_advice(dec, gpu_dec, facts));
}

}  // namespace tandem::pipeline
