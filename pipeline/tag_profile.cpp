#include "pipeline/tag_profile.h"

#include <fmt/core.h>

namespace tandem::pipeline {
namespace {

using profile::Activity;

// The mean split of the threads whose name starts with `prefix`.
struct Group {
  int threads = 0;
  profile::TimeSplit split;
  double share(Activity a) const { return split.share(a); }
};

Group group(const profile::ProfileSummary& s, const std::string& prefix) {
  Group g;
  for (const profile::ThreadSummary& t : s.threads)
    if (t.name.rfind(prefix, 0) == 0) ++g.threads, g.split += t.split;
  return g;
}

double pct(double share) { return 100.0 * share; }

}  // namespace

std::string tag_profile_verdict(const profile::ProfileSummary& s, bool inference_on_cpu) {
  const Group infer = group(s, "inference");
  const Group dec = group(s, "decoder-");
  const Group writer = group(s, "writer");
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
                       pct(dec.share(Activity::wait_lock)),
                       inference_on_cpu ? "run on a GPU (--device cuda) or a smaller model"
                                        : "try --precision fp16 or a larger --batch");
  }
  const bool reading = dec.share(Activity::io) > dec.share(Activity::compute);
  return fmt::format("inference thread waited {:.0f}% of the run for batches, decoders busy {:.0f}% ({:.0f}% reading "
                     "files): decoders are the limit: {}",
                     pct(infer.share(Activity::wait_lock)), pct(dec_busy), pct(dec.share(Activity::io)),
                     reading ? "reading files is slow: faster storage"
                     : inference_on_cpu ? "more --decoders (they share the cores with inference)"
                                        : "add --decoders or enable nvJPEG (--nvjpeg on)");
}

}  // namespace tandem::pipeline
