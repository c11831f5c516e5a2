#pragma once
// The `tandem tag` engine: read → decode → batch → infer → write over a list
// of files, every stage on its own threads, joined by bounded queues so each
// waits only on its neighbours:
//   decoder threads (N): read the file, hash it, decode (DCT-scaled to the
//     model's input), write the network input straight into a slot of a
//     batch buffer (pipeline/batch_ring.h; pinned on a GPU);
//   inference thread: runs each batch as it fills (a stalled partial batch is
//     flushed), always at the full batch shape so the plan (and its CUDA
//     graph) is compiled once;
//   writer thread: hands finished records to the sink in groups (one
//     catalog transaction per group).
// Per-file errors (unreadable, corrupt, unsupported, too large) become
// records too; only a model or sink failure stops the run.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "image/image.h"
#include "pipeline/catalog.h"
#include "pipeline/face_stage.h"
#include "pipeline/file_feed.h"
#include "pipeline/gpu_jpeg.h"
#include "pipeline/tag_model.h"
#include "pipeline/thumbnails.h"

namespace tandem::pipeline {

// A file's result as the catalog stores it (model_id is the model's id()).
using TagRecord = FileRecord;

struct TaggerOptions {
  int decoders = 0;  // decoder threads; 0 = one per core
  int batch = 32;    // images per network run
  int buffers = 3;   // batch buffers in flight (filling, ready, running)
  std::chrono::milliseconds stall{200};  // flush a partial batch after this long without a new image
  // Limits. The model sets the DCT-scaling target, and whether progressive
  // files skip luma's refinement scans where coarse_progressive allows it
  // (by default; off: every scan decoded, for any model).
  image::DecodeOptions decode = [] {
    image::DecodeOptions d;
    d.coarse_progressive = true;
    return d;
  }();
  // GPU JPEG decoders (not owned), one thread each, sharing the files with
  // the CPU decoders: each takes the next files when it is free, in groups
  // sized by its measured rate, so the GPU takes what it can and never holds
  // the tail. Files the engines refuse (progressive) go to the CPU decoders.
  std::vector<GpuJpegDecoder*> gpu_decoders;
  // The CPU decoders pass the baseline JPEGs they read to the GPU decoders
  // while the engines keep up (pipeline/gpu_backlog.h), and decode them
  // themselves only when the engines are behind.
  bool baseline_to_gpu = true;
  // The CPU decoder threads' niceness (Linux; 0: the process's), so that
  // the threads feeding the GPU and the network get a core first.
  int cpu_decoder_nice = 0;
  // A GPU decoder that cannot open (GpuJpegDecoder::open, on its thread)
  // fails the run when required; otherwise its files go to the others.
  bool gpu_decoders_required = false;
  // Decode and fill batches, but run no network: the decoders' ceiling.
  bool decode_only = false;
  // Faces of every photo (not owned; null: none), found on each batch after
  // the model ran (pipeline/face_stage.h), on a thread of their own while
  // the model runs the next batch; their region decodes on the decoder
  // threads' spare turns unless the stage has crop threads of its own. The
  // photos the GPU decoders decode are kept there (GpuJpegDecoder::
  // keep_decoded, when the caller set it) and their faces cut from them.
  FaceStage* faces = nullptr;
  // Threads running the face stage, each on its own batch. With the
  // networks on a GPU, two keep one batch's slowest region decode from
  // holding up the next batch's faces (one thread was busy 44% of a run on
  // the H200 host and held the inference thread back); on the CPU the
  // networks share the cores with everything else and one is enough.
  int face_threads = 1;
  // Thumbnails (not owned; null: none) of every photo a CPU decoder
  // decodes, from its decoded pixels (pipeline/thumbnails.h).
  ThumbnailStore* thumbnails = nullptr;
};

// Where the GPU decoder threads' busy time goes (seconds, summed over the
// threads): a thread that waits leaves its engines idle, so these say what
// holds the engines back inside a run.
struct GpuDecoderTimes {
  double read_wait = 0;  // for the next group's files, read ahead
  double slot_wait = 0;  // for batch slots for a group (the network or the face stage behind)
  double on_gpu = 0;     // in the decode call: engines, resize kernels, copies, the wait for them
  double thumbnail_wait = 0;  // for room in the thumbnail writers' queue
  GpuDecoderTimes& operator+=(const GpuDecoderTimes& o) {
    read_wait += o.read_wait, slot_wait += o.slot_wait, on_gpu += o.on_gpu,
        thumbnail_wait += o.thumbnail_wait;
    return *this;
  }
};

// Seconds of thread time per stage, summed over the stage's threads.
struct StageTimes {
  double read = 0, decode = 0, resize = 0;  // decoder threads
  double slot_wait = 0;                     // decoders blocked on a free batch slot (inference behind)
  double gpu_decode = 0;                    // GPU decoder threads: reading, decoding on the GPU
  GpuDecoderTimes gpu;                      // the parts of gpu_decode
  double infer = 0, batch_wait = 0;         // inference thread: running, waiting for a batch
  double write = 0, write_wait = 0;         // writer thread: in the sink, waiting for records
  double faces = 0, faces_wait = 0;         // face thread: finding and describing faces, waiting for a batch
  double thumbnails = 0;                    // decoder threads: making and writing thumbnails
};

struct TagStats {
  int64_t files = 0, tagged = 0, failed = 0;
  std::map<std::string, int64_t> failures;  // by error_kind
  // The first kMaxFailedListed failed files: kind, and the message naming the file.
  static constexpr size_t kMaxFailedListed = 50;
  std::vector<std::pair<std::string, std::string>> failed_files;
  int64_t batches = 0, partial_batches = 0;
  int gpu_decoders_unopened = 0;  // GPU decoders that could not open
  std::string gpu_open_error;     // why the first of them could not
  int gpu_decoders_out_of_memory = 0;  // GPU decoders that stopped for want of GPU memory
  std::string gpu_memory_error;        // the first of their errors
  int decoders = 0;
  int gpu_decoders = 0;
  int face_threads = 0;  // the face stage's threads (0: no faces)
  int64_t gpu_decoded = 0;  // images the GPU decoded (the rest: the CPU decoders)
  int64_t gpu_refused = 0;  // files a GPU decoder handed to the CPU (progressive, ...)
  int64_t thumbnails = 0, thumbnails_failed = 0;  // written; could not be written (the photo is tagged)
  // The face stage: photos whose faces were cut from the GPU decoders' kept
  // pixels or from region decodes, and where its threads' time went.
  FaceStageStats faces;
  std::string thumbnail_error;                    // why the first one failed
  bool decode_only = false;
  double wall_s = 0;
  StageTimes time;
  // "decode", "inference", "faces" or "write": the stage whose threads were busiest
  // relative to their number, with the reason in words.
  std::string limiting_stage, verdict;
};

// `part` (one run over a share of the files, as a queue worker makes
// several) added into `total`: counts and thread times summed, the first
// errors kept. wall_s and the verdict are the caller's to set for the whole.
void add_run(TagStats& total, const TagStats& part);

// Live counters for a progress display (read from any thread).
struct TagProgress {
  std::atomic<int64_t> total{0}, done{0}, failed{0};
};

class Tagger {
 public:
  Tagger(TagModel& model, const TaggerOptions& options);

  // Tags `files`. sink receives groups of records from one thread, in no
  // particular file order; an exception from it stops the run and is
  // rethrown here after every thread has stopped.
  TagStats run(const std::vector<InputFile>& files, const std::function<void(std::vector<TagRecord>&)>& sink);
  // The same over files that may keep arriving while the run goes on.
  TagStats run(FileFeed& feed, const std::function<void(std::vector<TagRecord>&)>& sink);

  const TagProgress& progress() const { return progress_; }

 private:
  TagModel& model_;
  TaggerOptions options_;
  TagProgress progress_;
};

// Decoder threads by default: every core, whether inference runs on a GPU
// or shares the cores.
int default_decoders();

}  // namespace tandem::pipeline
