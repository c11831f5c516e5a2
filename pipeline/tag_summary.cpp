#include "pipeline/tag_summary.h"

#include <fmt/core.h>

#include <algorithm>

namespace tandem::pipeline {

namespace {

// What to try when the decoders limit the run.
std::string decode_advice(const TagStats& s, bool inference_on_cpu) {
  if (inference_on_cpu) return "inference shares the cores; more --decoders trades inference speed";
  if (s.gpu_decoders == 0) return "add decoders (--decoders) or let the GPU decode too (--nvjpeg)";
  if (s.gpu_refused == 0) return "add decoders (--decoders, --gpu-decoders)";
  // The GPU's engines take baseline JPEGs only; what they refuse decodes on
  // the CPU, and a progressive 12-MP file costs a whole Huffman decode there.
  return fmt::format("the CPU decoders took the {} files the GPU's JPEG engines refuse (progressive JPEGs, "
                     "other formats): more cores, or fewer such files, go faster",
                     s.gpu_refused);
}

}  // namespace

void diagnose(TagStats& s, const TagRunFacts& facts) {
  const bool inference_on_cpu = facts.inference_on_cpu;
  const StageTimes& t = s.time;
  double wall = std::max(s.wall_s, 1e-9);
  double decode_busy = (t.read + t.decode + t.resize) / (wall * std::max(1, s.decoders));
  double infer_busy = t.infer / wall;
  double write_busy = t.write / wall;
  double faces_busy = t.faces / (wall * std::max(1, s.face_threads));
  if (s.files == s.failed || s.batches == 0) {
    s.limiting_stage = "decode";
    s.verdict = "no image reached the network";
  } else if (faces_busy > infer_busy && faces_busy >= decode_busy && faces_busy >= write_busy) {
    s.limiting_stage = "faces";
    s.verdict = fmt::format("the face stage busy {:.0f}% of the run, inference {:.0f}%, decoders {:.0f}%: "
                            "--faces off tags without faces",
                            100 * faces_busy, 100 * infer_busy, 100 * decode_busy);
  } else if (infer_busy >= decode_busy && infer_busy >= write_busy) {
    s.limiting_stage = "inference";
    s.verdict = fmt::format("inference busy {:.0f}% of the run, decoders {:.0f}%, waiting {:.1f} s for free batch slots: ",
                            100 * infer_busy, 100 * decode_busy, t.slot_wait) +
                (inference_on_cpu ? "run on a GPU (--device cuda) or a smaller model"
                                  : facts.low_precision ? "try a larger --batch" : "try --precision fp16 or a larger --batch");
  } else if (decode_busy >= write_busy) {
    s.limiting_stage = "decode";
    s.verdict = fmt::format("decoders busy {:.0f}% of the run, inference waited {:.0f}% of it for images: ",
                            100 * decode_busy, 100 * t.batch_wait / wall) +
                decode_advice(s, inference_on_cpu);
  } else {
    s.limiting_stage = "write";
    s.verdict = fmt::format("writing busy {:.0f}% of the run: put the catalog on a faster disk", 100 * write_busy);
  }
}

std::string format_summary(const TagStats& s, int64_t skipped, int64_t ignored, int64_t unreadable) {
  const StageTimes& t = s.time;
  std::string out = fmt::format("{} {} images, {} failed, {} up to date (skipped), {} not images{}\n",
                                s.decode_only ? "decoded" : "tagged", s.tagged, s.failed, skipped, ignored,
                                s.decode_only ? " (--decode-only: no inference)" : "");
  if (unreadable > 0)
    out += fmt::format("  could not be read: {} files or folders (each named above), their photos not tagged\n",
                       unreadable);
  for (const auto& [kind, n] : s.failures) out += fmt::format("  failed: {} {}\n", n, kind);
  constexpr size_t kListed = 20;
  for (size_t i = 0; i < s.failed_files.size() && i < kListed; ++i)
    out += fmt::format("    [{}] {}\n", s.failed_files[i].first, s.failed_files[i].second);
  if (s.failed > int64_t(kListed))
    out += fmt::format("    ... and {} more (the catalog or --jsonl has every one)\n", s.failed - int64_t(kListed));
  double wall = std::max(s.wall_s, 1e-9);
  out += fmt::format("{:.1f} s, {:.1f} images/s; {} decoders, {} batches ({} partial)\n", s.wall_s,
                     double(s.tagged + s.failed) / wall, s.decoders, s.batches, s.partial_batches);
  if (s.gpu_decoders > 0)
    out += fmt::format(
        "GPU JPEG decoders ({}): {} images ({:.0f}%), {} files handed to the CPU decoders; "
        "{:.1f} s busy (decoding on the GPU {:.1f} s; waiting for files read ahead {:.1f} s, "
        "for batch slots {:.1f} s, for the thumbnail writers {:.1f} s)\n",
        s.gpu_decoders, s.gpu_decoded,
        100.0 * double(s.gpu_decoded) / double(std::max<int64_t>(1, s.tagged)), s.gpu_refused,
        t.gpu_decode, t.gpu.on_gpu, t.gpu.read_wait, t.gpu.slot_wait, t.gpu.thumbnail_wait);
  out += fmt::format("thread time: read {:.1f} s, decode {:.1f} s, resize {:.1f} s, waiting for a batch slot {:.1f} s; "
                     "inference {:.1f} s (waiting for images {:.1f} s); write {:.1f} s\n",
                     t.read, t.decode, t.resize, t.slot_wait, t.infer, t.batch_wait, t.write);
  if (t.faces > 0) {
    const FaceStageStats& f = s.faces;
    out += fmt::format(
        "faces: {:.1f} s (waiting for a batch {:.1f} s; crops {:.1f} s, networks {:.1f} s, "
        "waiting for the device {:.1f} s)",
        t.faces, t.faces_wait, f.crops_s, f.networks_s, f.device_wait_s);
    // The GPU's wording first, as scripts read it.
    if (s.gpu_decoders > 0 && f.from_kept + f.from_decode + f.decoded > 0)
      out += fmt::format(
          "; photos with faces: {} cut from the GPU's decode, {} decoded again, {} cut from "
          "the CPU decoders' decode",
          f.from_kept, f.decoded, f.from_decode);
    else if (f.from_decode + f.decoded > 0)
      out += fmt::format(
          "; photos with faces: {} cut from the decode for the network, {} decoded again",
          f.from_decode, f.decoded);
    out += "\n";
  }
  if (s.thumbnails > 0 || s.thumbnails_failed > 0) {
    out += fmt::format("thumbnails: {} written ({:.1f} s of thread time{})", s.thumbnails, t.thumbnails,
                       s.gpu_decoded > 0 ? fmt::format("; {} fitted on the GPU", s.gpu_decoded) : "");
    if (s.thumbnails_failed > 0)
      out += fmt::format("; {} failed, the first: {}", s.thumbnails_failed, s.thumbnail_error);
    out += "\n";
  }
  out += fmt::format("limited by {}: {}\n", s.limiting_stage, s.verdict);
  return out;
}

}  // namespace tandem::pipeline
