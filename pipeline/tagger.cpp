#include "pipeline/tagger.h"

#define XXH_INLINE_ALL  // header-only: no link dependency for users of the installed library
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "core/error.h"
#include "image/decode.h"
#include "pipeline/batch_ring.h"
#include "pipeline/bounded_queue.h"
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
struct SlotMeta {
  TagRecord record;
  bool filled = false;  // false: the slot's input could not be written
};

// Work shared by the stages of one run.
struct Run {
  Run(int buffers, int slots) : ring(buffers, slots), meta(size_t(buffers), std::vector<SlotMeta>(size_t(slots))) {}
  BatchRing ring;
  std::vector<std::vector<SlotMeta>> meta;  // [buffer][slot]
  BoundedQueue<std::vector<TagRecord>> done{64};
  std::atomic<size_t> next_file{0};
  std::mutex time_mutex;
  StageTimes time;
  std::mutex error_mutex;
  std::exception_ptr error;  // first fatal error (model or sink)
  std::atomic<bool> stop{false};

  void fail(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!error) error = e;
    stop = true;
  }
  void add_time(const StageTimes& t) {
    std::lock_guard<std::mutex> lock(time_mutex);
    time.read += t.read, time.decode += t.decode, time.resize += t.resize, time.slot_wait += t.slot_wait;
    time.infer += t.infer, time.batch_wait += t.batch_wait, time.write += t.write, time.write_wait += t.write_wait;
  }
};

class DecoderThread {
 public:
  DecoderThread(TagModel& model, const TaggerOptions& o, Run& run, float* const* buffers,
                const std::vector<InputFile>& files)
      : model_(model), run_(run), buffers_(buffers), files_(files), writer_(model.make_writer()), opt_(o.decode) {
    opt_.min_width = model.decode_min_width();
    opt_.min_height = model.decode_min_height();
  }

  void operator()(int index) {
    TANDEM_THREAD_NAME("decoder-" + std::to_string(index));
    try {
      for (size_t i; !run_.stop && (i = run_.next_file++) < files_.size();) one(files_[i]);
    } catch (...) {
      run_.fail(std::current_exception());
    }
    run_.add_time(time_);
  }

 private:
  void one(const InputFile& f) {
    TagRecord r;
    r.path = f.path, r.size = f.size, r.mtime_ns = f.mtime_ns, r.model_id = model_.id();
    Clock::time_point t0 = Clock::now();
    try {
      TANDEM_ZONE_CAT("read", "tag");
      image::read_file_into(bytes_, f.path, opt_.max_file_bytes);
    } catch (const std::exception& e) {
      return failed(std::move(r), "unreadable", e.what(), t0);
    }
    r.content_hash = hash_hex(bytes_);
    Clock::time_point t1 = Clock::now();
    time_.read += std::chrono::duration<double>(t1 - t0).count();
    try {
      TANDEM_ZONE_CAT("decode", "tag");
      image::decode_image_into(img_, bytes_, opt_, f.path);
    } catch (const std::exception& e) {
      time_.decode += seconds_since(t1);
      return failed(std::move(r), decode_error_kind(bytes_, e.what()), e.what(), t0);
    }
    Clock::time_point t2 = Clock::now();
    time_.decode += std::chrono::duration<double>(t2 - t1).count();
    r.width = img_.full_width, r.height = img_.full_height;
    BatchRing::Claim c = run_.ring.claim();
    Clock::time_point t3 = Clock::now();
    time_.slot_wait += std::chrono::duration<double>(t3 - t2).count();
    SlotMeta& m = run_.meta[size_t(c.buffer)][size_t(c.slot)];
    try {
      TANDEM_ZONE_CAT("resize", "tag");
      writer_->write(img_, buffers_[c.buffer] + size_t(c.slot) * model_.slot_floats());
      m.filled = true;
    } catch (const std::exception& e) {
      r.ok = false, r.error_kind = "failed", r.error = e.what();
      m.filled = false;
    }
    time_.resize += seconds_since(t3);
    r.decode_ms = 1e3 * (std::chrono::duration<double>(t2 - t0).count() + seconds_since(t3));
    m.record = std::move(r);
    run_.ring.commit(c);
  }

  void failed(TagRecord r, const std::string& kind, const std::string& message, Clock::time_point t0) {
    r.ok = false, r.error_kind = kind, r.error = message;
    r.decode_ms = 1e3 * seconds_since(t0);
    std::vector<TagRecord> one;
    one.push_back(std::move(r));
    run_.done.push(std::move(one));
  }

  TagModel& model_;
  Run& run_;
  float* const* buffers_;
  const std::vector<InputFile>& files_;
  std::unique_ptr<SlotWriter> writer_;
  image::DecodeOptions opt_;
  std::vector<uint8_t> bytes_;
  image::Image img_;
  StageTimes time_;
};

}  // namespace

int default_decoders(bool inference_on_cpu) {
  int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return inference_on_cpu ? std::max(1, cores / 2) : cores;
}

Tagger::Tagger(TagModel& model, const TaggerOptions& options) : model_(model), options_(options) {
  check(options_.batch >= 1, "tag: batch must be at least 1");
  check(options_.buffers >= 2, "tag: at least two batch buffers (one filling while one runs)");
  if (options_.decoders <= 0) options_.decoders = default_decoders(model.backend().device().is_cpu());
}

TagStats Tagger::run(const std::vector<InputFile>& files, const std::function<void(std::vector<TagRecord>&)>& sink) {
  TagStats stats;
  stats.files = int64_t(files.size());
  stats.decoders = options_.decoders;
  progress_.total = int64_t(files.size());
  Clock::time_point start = Clock::now();

  const int slots = options_.batch;
  std::vector<HostBuffer> memory;
  std::vector<float*> buffers;
  for (int b = 0; b < options_.buffers; ++b) {
    memory.emplace_back(model_.backend(), model_.slot_floats() * size_t(slots) * sizeof(float));
    buffers.push_back(static_cast<float*>(memory.back().get()));
  }
  Run run(options_.buffers, slots);

  std::thread writer([&] {
    TANDEM_THREAD_NAME("writer");
    StageTimes t;
    for (;;) {
      Clock::time_point w0 = Clock::now();
      std::optional<std::vector<TagRecord>> group = run.done.pop();
      t.write_wait += seconds_since(w0);
      if (!group) break;
      // Whatever else is already waiting joins this group: one transaction.
      while (run.done.size() > 0)
        if (auto more = run.done.pop()) group->insert(group->end(), std::make_move_iterator(more->begin()),
                                                      std::make_move_iterator(more->end()));
      Clock::time_point w1 = Clock::now();
      try {
        if (!run.stop) sink(*group);
      } catch (...) {
        run.fail(std::current_exception());
      }
      t.write += seconds_since(w1);
      for (const TagRecord& r : *group) {
        ++progress_.done;
        if (!r.ok) ++progress_.failed, ++stats.failures[r.error_kind];
      }
    }
    run.add_time(t);
  });

  std::thread infer([&] {
    TANDEM_THREAD_NAME("inference");
    StageTimes t;
    try {
      for (;;) {
        Clock::time_point i0 = Clock::now();
        std::optional<BatchRing::Batch> b = run.ring.take(options_.stall);
        t.batch_wait += seconds_since(i0);
        if (!b) break;
        Clock::time_point i1 = Clock::now();
        std::vector<SlotMeta>& meta = run.meta[size_t(b->buffer)];
        std::vector<std::pair<int, int>> sizes;
        for (int s = 0; s < b->count; ++s) sizes.push_back({meta[size_t(s)].record.width, meta[size_t(s)].record.height});
        Tensor batch = Tensor::wrap({DType::f32, model_.batch_shape(slots)}, buffers[size_t(b->buffer)]);
        std::vector<std::vector<TagScore>> tags;
        {
          TANDEM_ZONE_CAT("inference", "tag");
          tags = model_.tag(batch, b->count, sizes);
        }
        double ms = 1e3 * seconds_since(i1) / b->count;
        std::vector<TagRecord> out;
        for (int s = 0; s < b->count; ++s) {
          SlotMeta& m = meta[size_t(s)];
          TagRecord r = std::move(m.record);
          if (m.filled) r.ok = true, r.tags = std::move(tags[size_t(s)]), r.infer_ms = ms;
          out.push_back(std::move(r));
        }
        ++stats.batches;
        if (b->count < slots) ++stats.partial_batches;
        t.infer += seconds_since(i1);
        run.ring.release(b->buffer);
        run.done.push(std::move(out));
      }
    } catch (...) {
      run.fail(std::current_exception());
      // Keep taking batches so decoders blocked on a slot can finish.
      while (auto b = run.ring.take(options_.stall)) run.ring.release(b->buffer);
    }
    run.add_time(t);
  });

  std::vector<std::thread> decoders;
  for (int d = 0; d < options_.decoders; ++d)
    decoders.emplace_back(DecoderThread(model_, options_, run, buffers.data(), files), d);
  for (std::thread& d : decoders) d.join();
  run.ring.finish();
  infer.join();
  run.done.close();
  writer.join();
  if (run.error) std::rethrow_exception(run.error);

  stats.wall_s = seconds_since(start);
  stats.time = run.time;
  stats.failed = progress_.failed;
  stats.tagged = progress_.done - progress_.failed;
  return stats;
}

}  // namespace tandem::pipeline
