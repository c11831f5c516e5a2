#include "pipeline/tagger.h"

#define XXH_INLINE_ALL  // header-only: no link dependency for users of the installed library
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/error.h"
#include "image/decode.h"
#include "image/exif_orientation.h"
#include "image/jpeg_scans.h"
#include "image/photo_metadata.h"
#include "pipeline/batch_ring.h"
#include "pipeline/bounded_queue.h"
#include "pipeline/gpu_backlog.h"
#include "pipeline/prefetch_thread.h"
#include "pipeline/shared_tasks.h"
#include "pipeline/tag_profile.h"
#include "profile/zone.h"

namespace tandem::pipeline {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string hash_hex(const std::vector<uint8_t>& bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return hex;
}

// The error's kind from the stage that failed and what the decoder said.
std::string decode_error_kind(const std::vector<uint8_t>& bytes, const std::string& message) {
  if (bytes.empty()) return "empty";
  if (image::sniff_format(bytes) == image::ImageFormat::unknown) return "unsupported";
  if (message.find("over the limit of") != std::string::npos) return "too_large";
  return "corrupt";
}

// A slot's image, kept beside the batch buffer until the batch has run.
// Images per second over windows of at least half a second, for the
// profile's img/s counter: add() returns a rate when a window closes.
class RateMeter {
 public:
  std::optional<double> add(int64_t images) {
    count_ += images;
    const double s = seconds_since(start_);
    if (s < 0.5) return std::nullopt;
    const double r = double(count_) / s;
    count_ = 0, start_ = Clock::now();
    return r;
  }

 private:
  Clock::time_point start_ = Clock::now();
  int64_t count_ = 0;
};

struct SlotMeta {
  TagRecord record;
  bool filled = false;  // false: the slot's input could not be written
  bool skip = false;    // the GPU could not decode it: a CPU decoder does, and reports it
  // The GPU decoder holding the photo's full-resolution pixels for its
  // face crops, and their ticket (GpuJpegDecoder::read_kept); 0: none.
  GpuJpegDecoder* kept_by = nullptr;
  uint64_t kept = 0;
  // A CPU decoder's pixels for the network, held for the face crops they
  // can serve (kept_decode); null: none.
  std::shared_ptr<const image::Image> decoded;
};

// A batch on its way through the face stage: its records (the model's
// results in), and what the stage needs of the batch, copied out of it.
struct FaceJob {
  std::vector<TagRecord> records;
  std::vector<int> slot;  // records[k]'s slot in the batch; -1: no image
  Tensor input;           // FaceStage::input() of the batch
  int count = 0;
  std::vector<std::pair<int, int>> sizes;
  std::vector<std::string> photos;  // per slot; empty: no image
  std::vector<HeldPixels> kept;     // per slot: its pixels held for the face crops
};

// A thumbnail a GPU decoder made (pipeline/thumbnails.h's large size, from
// the same decode as the network's input), on its way to be written.
struct GpuThumbnail {
  std::string path;
  int64_t mtime_ns = 0, size = 0;
  image::Image pixels;
};
constexpr int kGpuThumbnailWriters = 2;

// Work shared by the stages of one run.
struct Run {
  Run(int buffers, int slots) : ring(buffers, slots), meta(size_t(buffers), std::vector<SlotMeta>(size_t(slots))) {}
  BatchRing ring;
  std::vector<std::vector<SlotMeta>> meta;  // [buffer][slot]
  BoundedQueue<std::vector<TagRecord>> done{64};
  // Files a GPU decoder read but hands to the CPU decoders (the engines do
  // not take them), with their bytes, so that none is read twice.
  BoundedQueue<ReadFile> handoff{64};
  // Baseline JPEGs the CPU decoders read and pass to the GPU decoders
  // (pipeline/gpu_backlog.h): about 0.1 s of the engines' work on a 12-MP
  // corpus (~300 img/s), so the CPU decoders take such files themselves
  // whenever the engines fall that far behind.
  GpuBacklog gpu_backlog{48, size_t(192) << 20};
  // Two batches may wait for the face stage: more would only hold memory
  // while the model runs ahead of it.
  BoundedQueue<FaceJob> face_jobs{2};
  // Held while a network runs on the device: the model and the face stage's
  // networks share its handles, which serve one thread at a time.
  std::mutex device;
  // The face stage's region decodes, which the decoder threads take before
  // their next file.
  SharedTasks face_crops;
  // Thumbnails the GPU decoders made, for the threads that write them.
  BoundedQueue<GpuThumbnail> gpu_thumbnails{256};
  Clock::time_point start = Clock::now();
  std::atomic<int64_t> cpu_done{0}, gpu_done{0}, gpu_refused{0};
  std::atomic<int64_t> thumbnails_failed{0};
  // The bytes of CPU decodes held for the face stage (SlotMeta::decoded),
  // capped: a GPU host's wide batches would otherwise hold gigabytes, where
  // a photo over the cap only costs its large faces a region decode.
  std::atomic<int64_t> held_decodes{0};
  static constexpr int64_t kMaxHeldDecodes = int64_t(1) << 30;
  // The face threads' counts and times, under time_mutex.
  FaceStageStats faces;
  std::string thumbnail_error;  // the first failure's, under error_mutex
  std::atomic<int> gpu_threads_running{0};
  int gpu_opening = 0;  // under gpu_open_mutex
  std::mutex gpu_open_mutex;
  std::condition_variable gpu_opened;
  std::atomic<int> gpu_unopened{0};
  std::string gpu_open_error;  // under error_mutex
  std::atomic<int> gpu_out_of_memory{0};
  std::string gpu_memory_error;  // under error_mutex
  std::mutex time_mutex;
  StageTimes time;
  std::mutex error_mutex;
  std::exception_ptr error;  // first fatal error (model or sink)
  std::atomic<bool> stop{false};

  void fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!error) error = e;
    stop = true;
    handoff.close();
    face_jobs.close();
  }
  // Images per second decoded so far, CPU and GPU together.
  double decode_rate() const {
    double s = seconds_since(start);
    return s > 0 ? double(cpu_done + gpu_done) / s : 0;
  }
  // How long the inference thread waits for a partial batch's next image
  // before it runs it: the configured stall, or three times the interval
  // between images at the rate seen so far when that is longer (a loaded
  // machine's slow decoders would otherwise flush batches that were about to
  // fill, and a batch runs at full shape, padding included), at most 2 s.
  std::chrono::milliseconds stall(std::chrono::milliseconds configured) const {
    double rate = decode_rate();
    if (rate <= 0) return configured;
    auto interval = std::chrono::milliseconds(int64_t(std::min(2000.0, 3000.0 / rate)));
    return std::max(configured, interval);
  }
  // The last GPU decoder to finish closes the hand-off queue: the CPU
  // decoders, out of files, wait on it until then. One that took from the
  // backlog leaves it; the last to leave hands what is still waiting there
  // to the CPU decoders.
  void gpu_thread_finished(bool took_backlog) {
    if (took_backlog)
      for (ReadFile& f : gpu_backlog.leave()) handoff.push(std::move(f));
    if (--gpu_threads_running == 0) handoff.close();
  }
  // The GPU decoders still opening. Where GPU decoding is required the CPU
  // decoders start on the files once none is: a CPU decoder takes a small
  // photo in milliseconds, and the engines take a second to open, so a run
  // of a few dozen photos went to the CPU alone.
  void gpu_open_done() {
    {
      std::lock_guard<std::mutex> lock(gpu_open_mutex);
      --gpu_opening;
    }
    gpu_opened.notify_all();
  }
  void wait_gpu_opened() {
    std::unique_lock<std::mutex> lock(gpu_open_mutex);
    // stop is not under the mutex: looked at every 20 ms.
    while (gpu_opening > 0 && !stop) gpu_opened.wait_for(lock, std::chrono::milliseconds(20));
  }
  void add_time(const StageTimes& t) {
    std::lock_guard<std::mutex> lock(time_mutex);
    time.read += t.read, time.decode += t.decode, time.resize += t.resize, time.slot_wait += t.slot_wait;
    time.gpu_decode += t.gpu_decode, time.gpu += t.gpu;
    time.infer += t.infer, time.batch_wait += t.batch_wait, time.write += t.write, time.write_wait += t.write_wait;
    time.faces += t.faces, time.faces_wait += t.faces_wait, time.thumbnails += t.thumbnails;
  }
};

// The photo's thumbnails from its decoded pixels; a failure is counted and
// reported once, and the photo is tagged all the same.
void write_thumbnail(ThumbnailStore& store, Run& run, const std::string& path, int64_t mtime_ns, int64_t size,
                     const image::Image& pixels, StageTimes& time) {
  Clock::time_point t0 = Clock::now();
  try {
    TANDEM_ZONE_CAT("thumbnail", "tag");
    store.write(path, mtime_ns, size, pixels);
  } catch (const std::exception& e) {
    if (run.thumbnails_failed++ == 0) {
      std::lock_guard<std::mutex> lock(run.error_mutex);
      run.thumbnail_error = e.what();
    }
  }
  time.thumbnails += seconds_since(t0);
}

// A record that never reached a batch goes straight to the writer.
void report_failure(Run& run, TagRecord r, const std::string& kind, const std::string& message,
                    Clock::time_point t0) {
  r.ok = false, r.error_kind = kind, r.error = message;
  r.decode_ms = 1e3 * seconds_since(t0);
  std::vector<TagRecord> one;
  one.push_back(std::move(r));
  run.done.push(std::move(one));
}

// Reads a file into `bytes` and starts its record (with the content hash);
// nothing, the failure reported, when it cannot be read.
std::optional<TagRecord> read_input(const InputFile& f, const std::string& model_id, int64_t max_bytes,
                                    std::vector<uint8_t>& bytes, Run& run) {
  Clock::time_point t0 = Clock::now();
  TagRecord r;
  r.path = f.path, r.size = f.size, r.mtime_ns = f.mtime_ns, r.model_id = model_id;
  try {
    TANDEM_ZONE_CAT("read", "io");
    image::read_file_into(bytes, f.path, max_bytes);
  } catch (const std::exception& e) {
    report_failure(run, std::move(r), "unreadable", e.what(), t0);
    return std::nullopt;
  }
  r.content_hash = hash_hex(bytes);
  r.meta = image::read_photo_metadata(bytes);
  return r;
}

class DecoderThread {
 public:
  DecoderThread(TagModel& model, const TaggerOptions& o, Run& run, float* const* buffers,
                FileFeed& feed)
      : model_(model),
        run_(run),
        buffers_(buffers),
        feed_(feed),
        writer_(model.make_writer()),
        opt_(o.decode),
        thumbnails_(o.thumbnails),
        wait_gpu_(o.gpu_decoders_required && !o.gpu_decoders.empty()),
        hold_decodes_(o.faces != nullptr),
        pass_baseline_(o.baseline_to_gpu && !o.gpu_decoders.empty()),
        nice_(o.cpu_decoder_nice) {
    opt_.min_width = model.decode_min_width();
    opt_.min_height = model.decode_min_height();
    opt_.coarse_progressive = opt_.coarse_progressive && model.coarse_progressive_ok();
  }

  void operator()(int index) {
    TANDEM_THREAD_NAME("decoder-" + std::to_string(index));
#ifdef __linux__
    // Linux's niceness is per thread. Best effort: where it is refused the
    // thread keeps the process's priority, as without the option.
    if (nice_ > 0) (void)setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), nice_);
#endif
    try {
      if (wait_gpu_) run_.wait_gpu_opened();
      while (!run_.stop) {
        if (run_.face_crops.help()) continue;
        // The GPU decoders' thumbnails before a file of one's own: a GPU
        // decoder waits when their queue is full, and the engines are the
        // faster decoders (two writer threads alone held them to 166 img/s
        // on the H200 host).
        if (std::optional<GpuThumbnail> g = run_.gpu_thumbnails.try_pop()) {
          write_thumbnail(*thumbnails_, run_, g->path, g->mtime_ns, g->size, g->pixels, time_);
          continue;
        }
        if (std::optional<ReadFile> h = run_.handoff.try_pop()) {
          decode(std::move(h->record), h->bytes, Clock::now());
          continue;
        }
        if (std::optional<InputFile> f = feed_.take()) {
          one(*f);
          continue;
        }
        // Out of files; what the GPU decoders refuse still comes until they finish.
        std::optional<ReadFile> h = run_.handoff.pop();
        if (!h) break;
        decode(std::move(h->record), h->bytes, Clock::now());
      }
    } catch (...) {
      run_.fail(std::current_exception());
    }
    run_.add_time(time_);
  }

 private:
  void one(const InputFile& f) {
    Clock::time_point t0 = Clock::now();
    std::optional<TagRecord> r = read_input(f, model_.id(), opt_.max_file_bytes, bytes_, run_);
    time_.read += seconds_since(t0);
    if (!r || pass_to_gpu(*r)) return;
    decode(std::move(*r), bytes_, t0);
  }

  // Passes a baseline JPEG just read to the GPU decoders' backlog while it
  // has room; false (the record and bytes untouched) when this thread
  // decodes it.
  bool pass_to_gpu(TagRecord& r) {
    if (!pass_baseline_ || !image::is_sequential_huffman_jpeg(bytes_)) return false;
    ReadFile f{std::move(r), std::move(bytes_)};
    if (run_.gpu_backlog.offer(f)) {
      bytes_ = run_.gpu_backlog.spare();
      return true;
    }
    r = std::move(f.record), bytes_ = std::move(f.bytes);
    return false;
  }

  // Decodes a file's bytes into a batch slot; t0: when work on it began.
  void decode(TagRecord r, const std::vector<uint8_t>& bytes, Clock::time_point t0) {
    Clock::time_point t1 = Clock::now();
    try {
      TANDEM_ZONE_CAT("decode", "tag");
      image::decode_image_into(img_, bytes, opt_, r.path);
    } catch (const std::exception& e) {
      time_.decode += seconds_since(t1);
      return report_failure(run_, std::move(r), decode_error_kind(bytes, e.what()), e.what(), t0);
    }
    Clock::time_point t2 = Clock::now();
    time_.decode += std::chrono::duration<double>(t2 - t1).count();
    r.width = img_.full_width, r.height = img_.full_height;
    if (thumbnails_) thumbnail(r);
    BatchRing::Claim c = claim_slot();
    Clock::time_point t3 = Clock::now();
    time_.slot_wait += std::chrono::duration<double>(t3 - t2).count();
    SlotMeta& m = run_.meta[size_t(c.buffer)][size_t(c.slot)];
    m.skip = false, m.kept_by = nullptr, m.kept = 0, m.decoded.reset();
    try {
      TANDEM_ZONE_CAT("resize", "tag");
      writer_->write(img_, buffers_[c.buffer] + size_t(c.slot) * model_.slot_floats());
      m.filled = true;
      m.decoded = hold_for_faces();
    } catch (const std::exception& e) {
      r.ok = false, r.error_kind = "failed", r.error = e.what();
      m.filled = false;
    }
    time_.resize += seconds_since(t3);
    r.decode_ms = 1e3 * (std::chrono::duration<double>(t2 - t0).count() + seconds_since(t3));
    m.record = std::move(r);
    run_.ring.commit(c);
    ++run_.cpu_done;
  }

  void thumbnail(const TagRecord& r) { write_thumbnail(*thumbnails_, run_, r.path, r.mtime_ns, r.size, img_, time_); }

  // The decode just written to a slot, handed over for the face stage while
  // the cap allows (the next decode gets a fresh image); null otherwise.
  std::shared_ptr<const image::Image> hold_for_faces() {
    if (!hold_decodes_ || img_.approximate) return nullptr;
    const int64_t bytes = int64_t(img_.bytes());
    if (run_.held_decodes.fetch_add(bytes) + bytes > Run::kMaxHeldDecodes) {
      run_.held_decodes -= bytes;
      return nullptr;
    }
    auto held = std::make_unique<image::Image>(std::move(img_));
    img_ = image::Image();
    return std::shared_ptr<const image::Image>(
        held.release(), [&total = run_.held_decodes, bytes](const image::Image* p) {
          total -= bytes;
          delete p;
        });
  }

  // A batch slot; while none is free (the network or the face stage
  // behind), the face stage's region decodes are done meanwhile.
  BatchRing::Claim claim_slot() {
    for (;;) {
      if (std::optional<BatchRing::Claim> c = run_.ring.claim_for(std::chrono::milliseconds(0))) return *c;
      if (run_.face_crops.help()) continue;
      if (std::optional<BatchRing::Claim> c = run_.ring.claim_for(std::chrono::milliseconds(2))) return *c;
    }
  }

  TagModel& model_;
  Run& run_;
  float* const* buffers_;
  FileFeed& feed_;
  std::unique_ptr<SlotWriter> writer_;
  image::DecodeOptions opt_;
  ThumbnailStore* thumbnails_;
  const bool wait_gpu_;  // GPU decoding required: the files wait for the GPU decoders to open
  const bool hold_decodes_;  // faces on: decodes are held for their crops
  const bool pass_baseline_;  // baseline JPEGs go to the GPU decoders' backlog while it has room
  const int nice_;
  std::vector<uint8_t> bytes_;
  image::Image img_;
  StageTimes time_;
};

// Feeds one GPU JPEG decoder: takes the next files in a group, reads them,
// sends those the engines take through the GPU straight into batch slots
// and hands the rest (progressive JPEGs, other formats, files the GPU failed
// on) to the CPU decoders. The group is as large as the decoder does in
// about kGroupSeconds at its measured rate, and never more than its share
// of the files left, so the GPU cannot hold the tail of the run while the
// CPU decoders idle.
class GpuDecoderThread {
 public:
  GpuDecoderThread(TagModel& model, GpuJpegDecoder& decoder, const TaggerOptions& o, Run& run,
                   float* const* buffers, FileFeed& feed)
      : model_(model),
        dec_(decoder),
        run_(run),
        buffers_(buffers),
        feed_(feed),
        max_group_(size_t(std::max(1, o.batch))),
        max_bytes_(o.decode.max_file_bytes),
        required_(o.gpu_decoders_required),
        thumbnails_(o.thumbnails != nullptr),
        keep_(o.faces != nullptr && !o.decode_only),
        take_backlog_(o.baseline_to_gpu) {}

  void operator()(int index) {
    TANDEM_THREAD_NAME("gpu-decoder-" + std::to_string(index));
    PrefetchThread<Group> reader("gpu-reader-" + std::to_string(index));
    try {
      while (open() && !run_.stop && group(reader)) {
      }
      if (reader.pending()) reader.take();  // stopped early: the failure is reported already
    } catch (...) {
      run_.fail(std::current_exception());
    }
    run_.add_time(time_);
    run_.gpu_thread_finished(joined_backlog_);
  }

 private:
  static constexpr double kGroupSeconds = 0.1;
  static constexpr size_t kFirstGroup = 8;

  // Opens the decoder, once; false when it cannot (its files go to the
  // others, or the run fails if GPU decoding was required).
  bool open() {
    if (opened_) return true;
    std::string why;
    {
      TANDEM_ZONE_CAT("open GPU JPEG decoder", "tag");
      struct Done {
        Run& run;
        ~Done() { run.gpu_open_done(); }
      } done{run_};
      opened_ = dec_.open(&why);
      // Before the CPU decoders are let go (done): from their first file
      // on, they pass baseline JPEGs here.
      if (opened_ && take_backlog_) run_.gpu_backlog.join(), joined_backlog_ = true;
    }
    if (opened_) return true;
    if (required_) throw Error("a GPU JPEG decoder was required but cannot open: " + why);
    ++run_.gpu_unopened;
    std::lock_guard<std::mutex> lock(run_.error_mutex);
    if (run_.gpu_open_error.empty()) run_.gpu_open_error = why;
    return false;
  }

  // Whether a group may still find files: in the list, or passed on by a
  // CPU decoder.
  bool more_files() const { return feed_.may_have_more() || run_.gpu_backlog.size() > 0; }

  // Files read for one decode call: those the engines take, with their bytes.
  struct Group {
    std::vector<TagRecord> records;
    std::vector<std::vector<uint8_t>> bytes;  // bytes[k] is records[k]'s file
  };

  size_t group_size() const {
    size_t want = rate_ > 0 ? size_t(rate_ * kGroupSeconds) : kFirstGroup;
    want = std::clamp<size_t>(want, 1, max_group_);
    // The last files of a fixed list go out in shares of the decoders'
    // rates, so that no engine is left with a long group at the end (files
    // that keep arriving end with the queue's claims instead).
    double all = run_.decode_rate();
    if (!feed_.growing() && rate_ > 0 && all > 0) {
      double share = std::min(1.0, rate_ / all);
      const double left = double(feed_.left() + run_.gpu_backlog.size());
      want = std::min(want, std::max<size_t>(1, size_t(std::ceil(left * share))));
    }
    return want;
  }

  // Takes the next `want` files and reads (and hashes) them into `buffers`
  // (reused: their capacity stays). Runs on the reader thread: it must not
  // touch the decoder, whose header parser decode() uses.
  Group read_group(size_t want, std::vector<std::vector<uint8_t>> buffers) {
    Group g;
    g.bytes = std::move(buffers);
    // The backlog's files first: read already, and a CPU decoder passed
    // them on rather than decode them.
    while (g.records.size() < want) {
      std::optional<ReadFile> f = run_.gpu_backlog.take();
      if (!f) break;
      if (g.bytes.size() <= g.records.size()) g.bytes.resize(g.records.size() + 1);
      std::swap(g.bytes[g.records.size()], f->bytes);
      if (f->bytes.capacity() > 0) run_.gpu_backlog.recycle(std::move(f->bytes));
      g.records.push_back(std::move(f->record));
    }
    while (g.records.size() < want) {
      std::optional<InputFile> f = feed_.take();
      if (!f) break;
      if (g.bytes.size() <= g.records.size()) g.bytes.resize(g.records.size() + 1);
      std::optional<TagRecord> r = read_input(*f, model_.id(), max_bytes_, g.bytes[g.records.size()], run_);
      if (r) g.records.push_back(std::move(*r));
    }
    return g;
  }

  // Hands the files the engines refuse (progressive JPEGs, other formats) to
  // the CPU decoders; the group keeps the rest, in order.
  void keep_supported(Group& g) {
    size_t kept = 0;
    for (size_t k = 0; k < g.records.size(); ++k) {
      if (!dec_.supports(g.bytes[k])) {
        hand_off(std::move(g.records[k]), std::move(g.bytes[k]));
        continue;
      }
      if (kept != k) std::swap(g.records[kept], g.records[k]), std::swap(g.bytes[kept], g.bytes[k]);
      ++kept;
    }
    g.records.resize(kept);
  }

  // One group; false when no file is left. While the engines decode it, the
  // reader thread reads (and hashes) the next group: reading took a quarter
  // of this thread's time when it was done in turn with decoding.
  bool group(PrefetchThread<Group>& reader) {
    Clock::time_point t0 = Clock::now();
    Group g = reader.pending() ? reader.take() : read_group(group_size(), std::move(spare_));
    time_.gpu.read_wait += seconds_since(t0);
    keep_supported(g);
    if (g.records.empty()) {
      spare_ = std::move(g.bytes);
      time_.gpu_decode += seconds_since(t0);
      return more_files();
    }
    std::vector<TagRecord>& records = g.records;
    // All the group's slots at once (never some held while waiting for more).
    Clock::time_point t1 = Clock::now();
    std::vector<BatchRing::Claim> claims = run_.ring.claim(int(records.size()));
    time_.gpu.slot_wait += seconds_since(t1);
    std::vector<GpuJpegDecoder::Job> jobs;
    if (thumbnails_ && thumb_floats_.size() < records.size()) thumb_floats_.resize(records.size());
    for (size_t k = 0; k < records.size(); ++k) {
      const BatchRing::Claim& c = claims[k];
      jobs.push_back({g.bytes[k], image::read_jpeg_orientation(g.bytes[k]),
                      buffers_[c.buffer] + size_t(c.slot) * model_.slot_floats()});
      jobs.back().keep = keep_;
      if (thumbnails_) {
        thumb_floats_[k].resize(size_t(kLargeThumbnailSide) * kLargeThumbnailSide * 3);
        jobs.back().thumbnail = thumb_floats_[k].data(), jobs.back().thumbnail_side = kLargeThumbnailSide;
      }
    }
    if (more_files())
      reader.start([this, want = group_size(), b = std::move(spare_)]() mutable {
        return read_group(want, std::move(b));
      });
    std::vector<GpuJpegDecoder::Result> results;
    try {
      TANDEM_ZONE_CAT("gpu decode", "tag");
      Clock::time_point t2 = Clock::now();
      results = dec_.decode(jobs);
      time_.gpu.on_gpu += seconds_since(t2);
    } catch (const Error& e) {
      for (const BatchRing::Claim& c : claims) commit(c, nullptr);
      if (e.kind() != ErrorKind::out_of_memory || required_) throw;
      retire(g, reader, e.what());
      return false;
    } catch (...) {
      for (const BatchRing::Claim& c : claims) commit(c, nullptr);
      throw;
    }
    double ms = 1e3 * seconds_since(t0) / double(records.size());
    std::vector<size_t> refused;
    for (size_t k = 0; k < records.size(); ++k) {
      if (!results[k].ok) {
        refused.push_back(k);
        commit(claims[k], nullptr);
        continue;
      }
      records[k].width = results[k].width, records[k].height = results[k].height;
      records[k].decode_ms = ms;
      if (results[k].thumbnail_width > 0) post_thumbnail(records[k], results[k], thumb_floats_[k]);
      commit(claims[k], &records[k], results[k].kept);
    }
    int64_t decoded = int64_t(records.size() - refused.size());
    run_.gpu_done += decoded;
    // The CPU decoders give the file its definitive result.
    for (size_t k : refused) hand_off(std::move(records[k]), std::move(g.bytes[k]));
    spare_ = std::move(g.bytes);
    double s = seconds_since(t0);
    time_.gpu_decode += s;
    if (decoded > 0) {
      double r = double(decoded) / s;
      rate_ = rate_ > 0 ? 0.7 * rate_ + 0.3 * r : r;
    }
    return true;
  }

  // Commits a claimed slot, holding `r`'s image (its pixels kept under
  // ticket `kept`, when not 0), or nothing to report.
  void commit(const BatchRing::Claim& c, TagRecord* r, uint64_t kept = 0) {
    SlotMeta& m = run_.meta[size_t(c.buffer)][size_t(c.slot)];
    m.filled = r != nullptr;
    m.skip = r == nullptr;
    m.kept_by = kept ? &dec_ : nullptr, m.kept = kept;
    if (r) m.record = std::move(*r);
    run_.ring.commit(c);
  }

  // The GPU's thumbnail pixels (whole numbers 0..255 as floats) as an image,
  // to the threads that encode and write thumbnails.
  void post_thumbnail(const TagRecord& r, const GpuJpegDecoder::Result& res, const std::vector<float>& floats) {
    GpuThumbnail t{r.path, r.mtime_ns, r.size, image::Image(res.thumbnail_width, res.thumbnail_height, 3)};
    t.pixels.full_width = res.width, t.pixels.full_height = res.height;
    const size_t n = size_t(res.thumbnail_width) * size_t(res.thumbnail_height) * 3;
    uint8_t* out = t.pixels.data();
    for (size_t i = 0; i < n; ++i) out[i] = uint8_t(floats[i]);
    Clock::time_point t0 = Clock::now();
    run_.gpu_thumbnails.push(std::move(t));
    time_.gpu.thumbnail_wait += seconds_since(t0);
  }

  // Out of GPU memory (a group outgrew the decoder's buffers while another
  // process held the rest): this decoder stops and the CPU decoders take its
  // files, the group in hand and the one read ahead, instead of the run
  // failing for want of a faster decoder. Inference keeps the memory its
  // plans hold.
  void retire(Group& g, PrefetchThread<Group>& reader, const std::string& why) {
    hand_off_all(g);
    if (reader.pending()) {
      Group next = reader.take();
      hand_off_all(next);
    }
    ++run_.gpu_out_of_memory;
    std::lock_guard<std::mutex> lock(run_.error_mutex);
    if (run_.gpu_memory_error.empty()) run_.gpu_memory_error = why;
  }

  void hand_off_all(Group& g) {
    for (size_t k = 0; k < g.records.size(); ++k) hand_off(std::move(g.records[k]), std::move(g.bytes[k]));
  }

  void hand_off(TagRecord r, std::vector<uint8_t> bytes) {
    ++run_.gpu_refused;
    run_.handoff.push(ReadFile{std::move(r), std::move(bytes)});
  }

  TagModel& model_;
  GpuJpegDecoder& dec_;
  Run& run_;
  float* const* buffers_;
  FileFeed& feed_;
  const size_t max_group_;
  const int64_t max_bytes_;
  const bool required_;
  const bool thumbnails_;  // whether to ask the engines for thumbnails
  const bool keep_;        // whether to keep the decoded photos for the face stage's crops
  const bool take_backlog_;  // whether to take the baseline files the CPU decoders pass on
  bool joined_backlog_ = false;
  std::vector<std::vector<float>> thumb_floats_;  // a group's thumbnails, reused
  bool opened_ = false;
  std::vector<std::vector<uint8_t>>
      spare_;  // file buffers of a decoded group, reused for a later one
  double rate_ = 0;                          // images/s, smoothed over groups
  StageTimes time_;
};

using Sink = std::function<void(std::vector<TagRecord>&)>;

// Hands finished records to the sink in groups, one catalog transaction
// each, and counts them for the progress display. The failures it lists
// are its own until the run has joined it (add_to).
class WriterThread {
 public:
  WriterThread(Run& run, TagProgress& progress, const Sink& sink) : run_(run), progress_(progress), sink_(sink) {}

  void operator()() {
    TANDEM_THREAD_NAME("writer");
    while (std::optional<std::vector<TagRecord>> group = next_group()) {
      write(*group);
      count(*group);
    }
    run_.add_time(time_);
  }

  // The failures this thread saw, into `stats`; only once it has been joined.
  void add_to(TagStats& stats) const {
    for (const auto& [kind, n] : failures_) stats.failures[kind] += n;
    for (const auto& f : failed_files_)
      if (stats.failed_files.size() < TagStats::kMaxFailedListed) stats.failed_files.push_back(f);
  }

 private:
  // The next records; nothing once the run has closed the queue.
  std::optional<std::vector<TagRecord>> next_group() {
    Clock::time_point t0 = Clock::now();
    std::optional<std::vector<TagRecord>> group = run_.done.pop();
    time_.write_wait += seconds_since(t0);
    if (!group) return group;
    // Whatever else is already waiting joins this group: one transaction.
    while (run_.done.size() > 0)
      if (auto more = run_.done.pop())
        group->insert(group->end(), std::make_move_iterator(more->begin()), std::make_move_iterator(more->end()));
    return group;
  }

  void write(std::vector<TagRecord>& group) {
    Clock::time_point t0 = Clock::now();
    try {
      TANDEM_ZONE_CAT("write", "io");
      if (!run_.stop) sink_(group);
    } catch (...) {
      run_.fail(std::current_exception());
    }
    time_.write += seconds_since(t0);
  }

  void count(const std::vector<TagRecord>& group) {
    for (const TagRecord& r : group) {
      ++progress_.done;
      if (r.ok) continue;
      ++progress_.failed, ++failures_[r.error_kind];
      if (failed_files_.size() < TagStats::kMaxFailedListed)
        failed_files_.emplace_back(r.error_kind, r.error.rfind(r.path, 0) == 0 ? r.error : r.path + ": " + r.error);
    }
  }

  Run& run_;
  TagProgress& progress_;
  const Sink& sink_;
  std::map<std::string, int64_t> failures_;
  std::vector<std::pair<std::string, std::string>> failed_files_;
  StageTimes time_;
};

// Runs each batch as it fills (a stalled partial batch is flushed), always
// at the full batch shape, and passes its records on: to the face stage
// when there is one, else to the writer. The batches it counts are its own
// until the run has joined it (add_to).
class InferenceThread {
 public:
  InferenceThread(TagModel& model, const TaggerOptions& o, FaceStage* faces, Run& run, float* const* buffers)
      : model_(model),
        faces_(faces),
        run_(run),
        buffers_(buffers),
        slots_(o.batch),
        stall_(o.stall),
        decode_only_(o.decode_only) {}

  void operator()() {
    TANDEM_THREAD_NAME("inference");
    try {
      if (!decode_only_) prepare();
      while (std::optional<BatchRing::Batch> b = next_batch()) one(*b);
    } catch (...) {
      run_.fail(std::current_exception());
      // Keep taking batches so decoders blocked on a slot can finish.
      while (auto b = run_.ring.take(stall_)) run_.ring.release(b->buffer);
    }
    run_.face_jobs.close();
    run_.add_time(time_);
  }

  // The batches this thread ran, into `stats`; only once it has been joined.
  void add_to(TagStats& stats) const { stats.batches += batches_, stats.partial_batches += partial_batches_; }

 private:
  void prepare() {
    TANDEM_ZONE_CAT(kPrepareModelZone, "tag");
    std::lock_guard<std::mutex> lock(run_.device);
    model_.prepare(Tensor::wrap({DType::f32, model_.batch_shape(slots_)}, buffers_[0]));
    if (faces_) faces_->prepare(slots_);
  }

  // The next batch; nothing once the decoders are done and the ring empty.
  std::optional<BatchRing::Batch> next_batch() {
    Clock::time_point t0 = Clock::now();
    std::optional<BatchRing::Batch> b = run_.ring.take(run_.stall(stall_));
    time_.batch_wait += seconds_since(t0);
    return b;
  }

  void one(const BatchRing::Batch& b) {
    Clock::time_point t0 = Clock::now();
    std::vector<SlotMeta>& meta = run_.meta[size_t(b.buffer)];
    std::vector<std::pair<int, int>> sizes;
    for (int s = 0; s < b.count; ++s) sizes.push_back({meta[size_t(s)].record.width, meta[size_t(s)].record.height});
    Tensor batch = Tensor::wrap({DType::f32, model_.batch_shape(slots_)}, buffers_[size_t(b.buffer)]);
    std::vector<TagResult> found = infer(batch, b.count, sizes);
    FaceJob job;
    if (faces_) {
      job.input = faces_->input(batch, b.count);
      job.count = b.count, job.sizes = sizes;
    }
    collect(meta, b.count, found, 1e3 * seconds_since(t0) / b.count, job);
    ++batches_;
    TANDEM_COUNTER("images decoded", run_.cpu_done + run_.gpu_done);
    if (std::optional<double> r = rate_.add(b.count)) TANDEM_COUNTER("images/s (inference, last 0.5 s)", *r);
    TANDEM_COUNTER("results waiting for the writer", run_.done.size());
    if (b.count < slots_) ++partial_batches_;
    time_.infer += seconds_since(t0);
    run_.ring.release(b.buffer);
    if (faces_)
      run_.face_jobs.push(std::move(job));
    else
      run_.done.push(std::move(job.records));
  }

  // The model's results for the batch's first `count` images (empty ones
  // when decoding only).
  std::vector<TagResult> infer(const Tensor& batch, int count, const std::vector<std::pair<int, int>>& sizes) {
    std::vector<TagResult> found(static_cast<size_t>(count));
    if (decode_only_) return found;
    TANDEM_ZONE_CAT("inference", "tag");
    std::lock_guard<std::mutex> lock(run_.device);
    found = model_.tag(batch, count, sizes);
    check(found.size() == size_t(count), "tag: the model gave " + std::to_string(found.size()) +
                                             " results for a batch of " + std::to_string(count));
    return found;
  }

  // The batch's records, the model's results in (ms: each image's share of
  // the batch's time), into `job`; and for the face stage, each slot's photo.
  // Slots a GPU decoder could not fill are the CPU decoders' to report.
  void collect(std::vector<SlotMeta>& meta, int count, std::vector<TagResult>& found, double ms, FaceJob& job) {
    for (int s = 0; s < count; ++s) {
      SlotMeta& m = meta[size_t(s)];
      if (faces_) {
        job.photos.push_back(m.filled && !m.skip ? m.record.path : std::string());
        job.kept.push_back(kept_pixels(m));
      }
      m.decoded.reset();  // the job holds it now
      if (m.skip) continue;
      TagRecord r = std::move(m.record);
      if (m.filled) {
        r.ok = true, r.infer_ms = decode_only_ ? 0 : ms;
        r.tags = std::move(found[size_t(s)].tags);
        r.objects = std::move(found[size_t(s)].objects);
      }
      job.slot.push_back(m.filled ? s : -1);
      job.records.push_back(std::move(r));
    }
  }

  // The slot's pixels a GPU decoder kept, or a CPU decoder held, as the
  // face stage reads them.
  static HeldPixels kept_pixels(const SlotMeta& m) {
    if (!m.filled || m.skip) return {};
    if (!m.kept_by) return {kept_decode(m.decoded), false};
    return {[d = m.kept_by, ticket = m.kept](const image::PixelRect& r, int shrink,
                                             image::Image& out, image::PixelRect* got) {
              return d->read_kept(ticket, r, shrink, out, got);
            },
            true};
  }

  TagModel& model_;
  FaceStage* const faces_;  // null: no face stage
  Run& run_;
  float* const* buffers_;
  const int slots_;
  const std::chrono::milliseconds stall_;
  const bool decode_only_;
  RateMeter rate_;
  int64_t batches_ = 0, partial_batches_ = 0;
  StageTimes time_;
};

// The faces of a batch while the model runs the next (on the H200 the stage
// on the inference thread halved the run's speed: the decoders waited for
// batch slots meanwhile); TaggerOptions::face_threads of them, each taking
// the next batch, then the records go to the writer.
class FaceThread {
 public:
  // shared_crops: the stage's region decodes go to the decoder threads
  // (Run::face_crops) rather than to crop threads of the stage's own.
  FaceThread(FaceStage& stage, Run& run, bool shared_crops) : stage_(stage), run_(run), shared_crops_(shared_crops) {}

  void operator()(int index) {
    TANDEM_THREAD_NAME("faces-" + std::to_string(index));
    const ParallelFor shared = [this](size_t n, const std::function<void(size_t)>& body) {
      run_.face_crops.run(n, body);
    };
    const ParallelFor* crops = shared_crops_ ? &shared : nullptr;
    try {
      while (std::optional<FaceJob> job = next_job()) one(*job, crops);
    } catch (...) {
      run_.fail(std::current_exception());
    }
    run_.add_time(time_);
    std::lock_guard<std::mutex> lock(run_.time_mutex);
    run_.faces += stats_;
  }

 private:
  // The next batch; nothing once the inference thread has closed the queue.
  std::optional<FaceJob> next_job() {
    Clock::time_point t0 = Clock::now();
    std::optional<FaceJob> job = run_.face_jobs.pop();
    time_.faces_wait += seconds_since(t0);
    return job;
  }

  void one(FaceJob& job, const ParallelFor* crops) {
    Clock::time_point t0 = Clock::now();
    std::vector<std::vector<DetectedObject>> objects(size_t(job.count));
    for (size_t k = 0; k < job.records.size(); ++k)
      if (job.slot[k] >= 0) objects[size_t(job.slot[k])] = job.records[k].objects;
    std::vector<std::vector<FaceRecord>> faces;
    {
      TANDEM_ZONE_CAT("faces", "tag");
      faces = stage_.run(std::move(job.input), job.count, job.sizes, job.photos, run_.device, crops,
                         &job.kept, &stats_, &objects);
    }
    for (size_t k = 0; k < job.records.size(); ++k)
      if (job.slot[k] >= 0) job.records[k].faces = std::move(faces[size_t(job.slot[k])]);
    time_.faces += seconds_since(t0);
    run_.done.push(std::move(job.records));
  }

  FaceStage& stage_;
  Run& run_;
  const bool shared_crops_;
  StageTimes time_;
  FaceStageStats stats_;
};

// Encodes and writes the thumbnails the GPU decoders made, until their
// queue closes: a thumbnail from 256 pixels takes ~3 ms, most of it zlib,
// which the threads feeding the engines must not spend.
void write_gpu_thumbnails(ThumbnailStore& store, Run& run, int index) {
  TANDEM_THREAD_NAME("thumbnails-" + std::to_string(index));
  StageTimes t;
  while (std::optional<GpuThumbnail> g = run.gpu_thumbnails.pop())
    write_thumbnail(store, run, g->path, g->mtime_ns, g->size, g->pixels, t);
  run.add_time(t);
}

// Takes the face stage's region decodes until `done`: the decoders' cores,
// once out of files, while the face stage finishes its last batches.
void help_face_crops(Run& run, const std::atomic<bool>& done, int index) {
  TANDEM_THREAD_NAME("face-crop-helper-" + std::to_string(index));
  while (!done)
    if (!run.face_crops.help()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace

int default_decoders() {
  // Every core, also when inference runs on the CPU: a decoder and the
  // network then share cores, and the decoders fill the time inference
  // waits between batches (2-core machine, the default detector: decoders
  // on every core and inference on half of them tag 19.7 img/s, against
  // 16.1 with the cores split between them).
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

Tagger::Tagger(TagModel& model, const TaggerOptions& options) : model_(model), options_(options) {
  check(options_.batch >= 1, "tag: batch must be at least 1");
  check(options_.buffers >= 2, "tag: at least two batch buffers (one filling while one runs)");
  if (options_.decoders <= 0) options_.decoders = default_decoders();
}

TagStats Tagger::run(const std::vector<InputFile>& files, const std::function<void(std::vector<TagRecord>&)>& sink) {
  FileFeed feed(files);
  return run(feed, sink);
}

TagStats Tagger::run(FileFeed& feed, const std::function<void(std::vector<TagRecord>&)>& sink) {
  TagStats stats;
  stats.decoders = options_.decoders;
  stats.gpu_decoders = int(options_.gpu_decoders.size());
  stats.decode_only = options_.decode_only;
  // Counters run on across runs (a queue worker's claims): one progress
  // display for them all; this run's figures are the differences.
  progress_.total += feed.received();
  feed.on_arrival = [this](size_t n) { progress_.total += int64_t(n); };
  const int64_t done_before = progress_.done, failed_before = progress_.failed;
  Clock::time_point start = Clock::now();

  const int slots = options_.batch;
  std::vector<HostBuffer> memory;
  std::vector<float*> buffers;
  for (int b = 0; b < options_.buffers; ++b) {
    memory.emplace_back(model_.backend(), model_.slot_floats() * size_t(slots) * sizeof(float));
    buffers.push_back(static_cast<float*>(memory.back().get()));
  }
  Run run(options_.buffers, slots);
  FaceStage* const faces_stage = options_.decode_only ? nullptr : options_.faces;
  // The decoder threads help with the face stage's region decodes, unless
  // it has threads of its own for them.
  const bool shared_crops = faces_stage && !faces_stage->has_own_crop_threads();

  // The writer and the inference thread keep counts of their own, read once
  // they have been joined: they run by reference.
  WriterThread writer(run, progress_, sink);
  std::thread writer_thread(std::ref(writer));
  InferenceThread inference(model_, options_, faces_stage, run, buffers.data());
  std::thread inference_thread(std::ref(inference));
  std::vector<std::thread> face_threads;
  if (faces_stage)
    for (int f = 0; f < std::max(1, options_.face_threads); ++f)
      face_threads.emplace_back(FaceThread(*faces_stage, run, shared_crops), f);
  stats.face_threads = int(face_threads.size());

  // The GPU decoders' thumbnails are encoded and written by the CPU
  // decoders between files, and by these threads (which also drain the
  // queue once the decoders are out of files), not on the threads that feed
  // the engines.
  std::vector<std::thread> thumbnail_writers;
  if (options_.thumbnails && !options_.gpu_decoders.empty() && !options_.decode_only)
    for (int w = 0; w < kGpuThumbnailWriters; ++w)
      thumbnail_writers.emplace_back(write_gpu_thumbnails, std::ref(*options_.thumbnails), std::ref(run), w);

  std::vector<std::thread> decoders;
  run.gpu_threads_running = int(options_.gpu_decoders.size());
  run.gpu_opening = int(options_.gpu_decoders.size());
  if (options_.gpu_decoders.empty()) run.handoff.close();
  for (size_t g = 0; g < options_.gpu_decoders.size(); ++g)
    decoders.emplace_back(GpuDecoderThread(model_, *options_.gpu_decoders[g], options_, run, buffers.data(), feed),
                          int(g));
  for (int d = 0; d < options_.decoders; ++d)
    decoders.emplace_back(DecoderThread(model_, options_, run, buffers.data(), feed), d);
  for (std::thread& d : decoders) d.join();
  run.gpu_thumbnails.close();
  run.ring.finish();
  // Out of files, the face stage may still be batches behind: the decoders'
  // cores take its region decodes until it is done (else it finished the
  // run alone: 25 of a 39 s run on the H200 host).
  std::atomic<bool> faces_done{false};
  std::vector<std::thread> helpers;
  if (shared_crops)
    for (int h = 0; h < options_.decoders; ++h)
      helpers.emplace_back(help_face_crops, std::ref(run), std::cref(faces_done), h);
  inference_thread.join();
  for (std::thread& f : face_threads) f.join();
  faces_done = true;
  for (std::thread& h : helpers) h.join();
  for (std::thread& w : thumbnail_writers) w.join();
  run.done.close();
  writer_thread.join();
  if (run.error) std::rethrow_exception(run.error);

  stats.files = feed.received();
  stats.wall_s = seconds_since(start);
  stats.time = run.time;
  writer.add_to(stats);
  inference.add_to(stats);
  stats.gpu_decoded = run.gpu_done;
  stats.gpu_refused = run.gpu_refused;
  stats.gpu_decoders_unopened = run.gpu_unopened;
  stats.gpu_open_error = run.gpu_open_error;
  stats.gpu_decoders_out_of_memory = run.gpu_out_of_memory;
  stats.gpu_memory_error = run.gpu_memory_error;
  stats.thumbnails = options_.thumbnails ? options_.thumbnails->written() : 0;
  stats.thumbnails_failed = run.thumbnails_failed;
  stats.faces = run.faces;
  stats.thumbnail_error = run.thumbnail_error;
  stats.failed = progress_.failed - failed_before;
  stats.tagged = progress_.done - done_before - stats.failed;
  return stats;
}

void add_run(TagStats& total, const TagStats& part) {
  total.files += part.files, total.tagged += part.tagged, total.failed += part.failed;
  for (const auto& [kind, n] : part.failures) total.failures[kind] += n;
  for (const auto& f : part.failed_files)
    if (total.failed_files.size() < TagStats::kMaxFailedListed) total.failed_files.push_back(f);
  total.batches += part.batches, total.partial_batches += part.partial_batches;
  total.gpu_decoders_unopened = std::max(total.gpu_decoders_unopened, part.gpu_decoders_unopened);
  if (total.gpu_open_error.empty()) total.gpu_open_error = part.gpu_open_error;
  total.gpu_decoders_out_of_memory = std::max(total.gpu_decoders_out_of_memory, part.gpu_decoders_out_of_memory);
  if (total.gpu_memory_error.empty()) total.gpu_memory_error = part.gpu_memory_error;
  total.decoders = std::max(total.decoders, part.decoders);
  total.gpu_decoders = std::max(total.gpu_decoders, part.gpu_decoders);
  total.face_threads = std::max(total.face_threads, part.face_threads);
  total.gpu_decoded += part.gpu_decoded, total.gpu_refused += part.gpu_refused;
  total.thumbnails += part.thumbnails, total.thumbnails_failed += part.thumbnails_failed;
  total.faces += part.faces;
  if (total.thumbnail_error.empty()) total.thumbnail_error = part.thumbnail_error;
  total.decode_only = part.decode_only;
  total.wall_s += part.wall_s;
  StageTimes& t = total.time;
  const StageTimes& p = part.time;
  t.read += p.read, t.decode += p.decode, t.resize += p.resize, t.slot_wait += p.slot_wait;
  t.gpu_decode += p.gpu_decode, t.gpu += p.gpu, t.infer += p.infer, t.batch_wait += p.batch_wait;
  t.write += p.write, t.write_wait += p.write_wait, t.faces += p.faces, t.faces_wait += p.faces_wait;
  t.thumbnails += p.thumbnails;
}

}  // namespace tandem::pipeline
