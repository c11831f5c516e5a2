// The tag pipeline (pipeline/tagger.h) over real image files written here,
// with a fake model whose tag for an image is computed from the image's own
// pixels (their mean, as image::decode_image decodes the file), so a test
// knows each file's right answer from the file alone: a record carrying
// another image's tag, a record lost or one given twice is caught. A fake
// GPU JPEG decoder (pipeline/gpu_jpeg.h) shares the files with the CPU
// decoders: it refuses progressive JPEGs (SOF2) and other formats, fails the
// files it is told to, and marks what it wrote so a test can tell which
// decoder produced each record.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <png.h>
#include <turbojpeg.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "cpu/cpu_backend.h"
#include "image/decode.h"
#include "pipeline/tagger.h"
#include "temp_dir.h"

using namespace tandem;
using namespace tandem::pipeline;
using tandem::testing::TempDir;

namespace {

constexpr int kSide = 8;          // the fake network's input: [N, 3, 8, 8]
constexpr int kDecodeTarget = 16;  // what the fake model asks the decoders for (DCT scaling)
constexpr float kByCpu = 0, kByGpu = 1;

image::DecodeOptions fake_decode_options() {
  image::DecodeOptions o;
  o.min_width = o.min_height = kDecodeTarget;
  return o;
}

double mean_of(const image::Image& img) {
  double sum = 0;
  for (size_t i = 0; i < img.bytes(); ++i) sum += img.data()[i];
  return sum / double(img.bytes());
}

// What a decoder writes into an image's slot: the mean of the pixels, who
// wrote it, and the image's full upright size.
void fill_slot(const image::Image& img, float by, float* slot) {
  std::fill(slot, slot + 3 * kSide * kSide, -1.f);
  slot[0] = float(mean_of(img));
  slot[1] = by;
  slot[2] = float(img.full_width);
  slot[3] = float(img.full_height);
}

std::string label(float by, float mean) { return fmt::format("{}:{:.4f}", by == kByGpu ? "gpu" : "cpu", mean); }
std::string size_label(int w, int h) { return fmt::format("size:{}x{}", w, h); }

// What a good image's record must say.
struct Want {
  std::string tag;   // the first tag, less its "cpu:"/"gpu:" prefix
  std::string size;  // the second tag
  int width = 0, height = 0;
};

Want expected(const std::vector<uint8_t>& bytes) {
  image::Image img = image::decode_image(bytes, fake_decode_options());
  return {label(kByCpu, float(mean_of(img))).substr(4), size_label(img.full_width, img.full_height),
          img.full_width, img.full_height};
}

// What GPU decoders have done so far, over all of them; CPU slot writers may
// wait on it (see FakeModel::hold_cpu_until_gpu).
struct GpuProgress {
  std::mutex mutex;
  std::condition_variable changed;
  int calls = 0, decoded = 0, refused = 0;  // calls: to decode()
  std::vector<std::vector<uint8_t>> refused_files;

  void called() {
    std::lock_guard<std::mutex> lock(mutex);
    ++calls;
    changed.notify_all();
  }

  void add(int d, const std::vector<uint8_t>* refused_file) {
    std::lock_guard<std::mutex> lock(mutex);
    decoded += d;
    if (refused_file) ++refused, refused_files.push_back(*refused_file);
    changed.notify_all();
  }
  void wait_for(int min_calls, int min_decoded, int min_refused) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return calls >= min_calls && decoded >= min_decoded && refused >= min_refused; });
  }
};

class FakeWriter final : public SlotWriter {
 public:
  FakeWriter(std::function<void()> before, bool refuse_gray)
      : before_(std::move(before)), refuse_gray_(refuse_gray) {}
  void write(const image::Image& img, float* slot) override {
    if (before_) before_();
    if (refuse_gray_ && img.channels == 1) throw Error("fake writer: gray images refused");
    fill_slot(img, kByCpu, slot);
  }

 private:
  std::function<void()> before_;
  bool refuse_gray_;
};

class FakeModel final : public TagModel {
 public:
  FakeModel() { id_ = "fake-mean@1"; }
  int decode_min_width() const override { return kDecodeTarget; }
  int decode_min_height() const override { return kDecodeTarget; }
  Shape batch_shape(int64_t n) const override { return {n, 3, kSide, kSide}; }
  std::unique_ptr<SlotWriter> make_writer() const override {
    return std::make_unique<FakeWriter>(
        [this] {
          if (gpu_gate_) gpu_gate_->wait_for(gate_calls_, gate_decoded_, gate_refused_);
          ++cpu_writes;
        },
        refuse_gray);
  }
  Backend& backend() const override { return cpu::cpu_backend(); }

  std::vector<TagResult> tag(const Tensor& batch, int count,
                             const std::vector<std::pair<int, int>>& sizes) override {
    ++tag_calls;
    if (batch.shape() != batch_shape(batch_size) || count < 1 || count > batch_size ||
        int(sizes.size()) != count)
      ++bad_calls;
    if (throw_in_tag) throw Error("fake model: out of luck");
    std::vector<TagResult> r(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      const float* slot = batch.data<float>() + size_t(i) * slot_floats();
      // The tags of slot i: its image's mean and who wrote it, and the
      // size the pipeline says slot i's image has. Its one object: the mean
      // again, boxed by the size the decoder wrote into the slot.
      const auto [w, h] = sizes[size_t(i)];
      r[size_t(i)].tags.push_back({label(slot[1], slot[0]), 0.5f});
      r[size_t(i)].tags.push_back({size_label(w, h), 0.25f});
      r[size_t(i)].objects.push_back({label(slot[1], slot[0]), 0.75f, Box{0, 0, slot[2], slot[3]}});
    }
    return r;
  }

  // CPU slot writers wait until the GPU decoders have been called, decoded
  // and refused this many times: the GPU surely gets its share of the files.
  void hold_cpu_until_gpu(GpuProgress* gate, int calls, int decoded, int refused) {
    gpu_gate_ = gate, gate_calls_ = calls, gate_decoded_ = decoded, gate_refused_ = refused;
  }

  int batch_size = 0;  // the batch the tagger runs (checked against each batch)
  bool throw_in_tag = false;
  // The CPU slot writers fail gray images: tag() still answers for their
  // slots (whatever the slot holds), and the pipeline must drop that answer.
  bool refuse_gray = false;
  std::atomic<int> tag_calls{0}, bad_calls{0};  // bad: a batch or count out of shape
  mutable std::atomic<int> cpu_writes{0};       // images the CPU decoders wrote into slots

 private:
  GpuProgress* gpu_gate_ = nullptr;
  int gate_calls_ = 0, gate_decoded_ = 0, gate_refused_ = 0;
};

// Whether a JPEG's frame header is SOF2 (progressive), walking the marker
// segments up to the first scan.
bool is_progressive_jpeg(std::span<const uint8_t> b) {
  size_t i = 2;
  while (i + 4 <= b.size() && b[i] == 0xFF) {
    uint8_t marker = b[i + 1];
    if (marker == 0xC2) return true;
    if (marker == 0xDA) return false;
    i += 2 + (size_t(b[i + 2]) << 8 | b[i + 3]);
  }
  return false;
}

class FakeGpuDecoder final : public GpuJpegDecoder {
 public:
  FakeGpuDecoder(GpuProgress& progress, std::vector<std::vector<uint8_t>> fail)
      : progress_(progress), fail_(std::move(fail)) {}

  bool open(std::string* why_not) override {
    ++open_calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(open_ms));
    if (cpu_writes) cpu_writes_when_open = cpu_writes->load();
    if (!cannot_open) return true;
    *why_not = "fake GPU: no JPEG engines";
    return false;
  }

  bool supports(std::span<const uint8_t> jpeg) override {
    EXPECT_EQ(open_calls, 1) << "used before open(), or opened again";
    bool ok = image::sniff_format(jpeg) == image::ImageFormat::jpeg && !is_progressive_jpeg(jpeg);
    if (!ok) {
      std::vector<uint8_t> copy(jpeg.begin(), jpeg.end());
      progress_.add(0, &copy);
    }
    return ok;
  }

  std::vector<Result> decode(const std::vector<Job>& jobs) override {
    progress_.called();
    if (throw_in_decode) throw Error("fake GPU: device lost");
    std::vector<Result> out;
    int decoded = 0;
    for (const Job& j : jobs) {
      std::vector<uint8_t> bytes(j.jpeg.begin(), j.jpeg.end());
      Result r;
      try {
        if (std::find(fail_.begin(), fail_.end(), bytes) != fail_.end()) throw Error("fake GPU: refused");
        image::Image img = image::decode_image(j.jpeg, fake_decode_options());
        fill_slot(img, kByGpu, j.out);
        r.ok = true, r.width = img.full_width, r.height = img.full_height;
        ++decoded;
      } catch (const Error& e) {
        r.error = e.what();
        progress_.add(0, &bytes);
      }
      out.push_back(r);
    }
    progress_.add(decoded, nullptr);
    return out;
  }

  bool throw_in_decode = false;
  bool cannot_open = false;
  int open_calls = 0;
  int open_ms = 0;                               // how long open() takes
  const std::atomic<int>* cpu_writes = nullptr;  // FakeModel::cpu_writes, read when open() ends
  int cpu_writes_when_open = -1;

 private:
  GpuProgress& progress_;
  std::vector<std::vector<uint8_t>> fail_;
};

// ---- The files ----

// An RGB (or gray) picture whose mean differs from image to image.
std::vector<uint8_t> pattern(int w, int h, int channels, int seed) {
  std::vector<uint8_t> px(size_t(w) * size_t(h) * size_t(channels));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c)
        px[(size_t(y) * size_t(w) + size_t(x)) * size_t(channels) + size_t(c)] =
            uint8_t(std::clamp(20 + 7 * seed + (x * 40) / w + (y * 30) / h + 25 * c, 0, 255));
  return px;
}

std::vector<uint8_t> encode_jpeg(int w, int h, int channels, int seed, int flags) {
  std::vector<uint8_t> px = pattern(w, h, channels, seed);
  tjhandle tj = tjInitCompress();
  unsigned char* jpg = nullptr;
  unsigned long size = 0;
  int rc = tjCompress2(tj, px.data(), w, 0, h, channels == 1 ? TJPF_GRAY : TJPF_RGB, &jpg, &size,
                       channels == 1 ? TJSAMP_GRAY : TJSAMP_420, 90, flags);
  std::vector<uint8_t> out;
  if (rc == 0) out.assign(jpg, jpg + size);
  tjFree(jpg);
  tjDestroy(tj);
  if (rc != 0) throw std::runtime_error("tjCompress2 failed");
  return out;
}

std::vector<uint8_t> encode_png(int w, int h, int seed) {
  std::vector<uint8_t> px = pattern(w, h, 3, seed);
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = png_uint_32(w), img.height = png_uint_32(h), img.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&img, nullptr, &size, 0, px.data(), 0, nullptr))
    throw std::runtime_error("png size failed");
  std::vector<uint8_t> out(size);
  if (!png_image_write_to_memory(&img, out.data(), &size, 0, px.data(), 0, nullptr))
    throw std::runtime_error("png write failed");
  out.resize(size);
  return out;
}

struct Corpus;
void fill_corpus(Corpus& c);

// A folder of images and broken files, each with the record it must get.
struct Corpus {
  Corpus() { fill_corpus(*this); }
  TempDir dir{"tagger"};
  std::vector<InputFile> files;
  std::map<std::string, std::vector<uint8_t>> bytes;  // what each readable file holds
  std::map<std::string, Want> want;                   // good files
  std::map<std::string, std::string> want_error;      // bad files: error_kind
  std::set<std::string> progressive;
  std::vector<std::vector<uint8_t>> gpu_fails;        // files the fake GPU fails on

  void add(const std::string& name, std::vector<uint8_t> b) {
    std::string path = dir.write(name, std::string(b.begin(), b.end()));
    files.push_back({path, int64_t(b.size()), 0});
    bytes[path] = std::move(b);
  }
  void good(const std::string& name, std::vector<uint8_t> b) {
    want[dir.file(name)] = expected(b);
    add(name, std::move(b));
  }
  void bad(const std::string& name, std::vector<uint8_t> b, const std::string& kind) {
    want_error[dir.file(name)] = kind;
    add(name, std::move(b));
  }
  std::string path_of(const std::vector<uint8_t>& b) const {
    for (const auto& [p, content] : bytes)
      if (content == b) return p;
    return "(no such file)";
  }
};

void fill_corpus(Corpus& c) {
  // 18 baseline JPEGs (one gray) with, after every third, one the GPU
  // refuses (progressive, PNG) or fails on: both kinds come early in the list.
  std::vector<std::function<void(int)>> refused = {
      [&](int seed) {
        c.good("progressive_0.jpg", encode_jpeg(36, 28, 3, seed, TJFLAG_PROGRESSIVE));
        c.progressive.insert(c.dir.file("progressive_0.jpg"));
      },
      [&](int seed) { c.good("drawing_0.png", encode_png(20, 17, seed)); },
      [&](int seed) {
        c.gpu_fails.push_back(encode_jpeg(33, 21, 3, seed, 0));
        c.good("photo_gpufail.jpg", c.gpu_fails.back());
      },
      [&](int seed) {
        c.good("progressive_1.jpg", encode_jpeg(40, 28, 3, seed, TJFLAG_PROGRESSIVE));
        c.progressive.insert(c.dir.file("progressive_1.jpg"));
      },
      [&](int seed) { c.good("drawing_1.png", encode_png(26, 17, seed)); },
      [&](int seed) {
        c.good("progressive_2.jpg", encode_jpeg(44, 28, 3, seed, TJFLAG_PROGRESSIVE));
        c.progressive.insert(c.dir.file("progressive_2.jpg"));
      },
      [&](int seed) { c.good("drawing_2.png", encode_png(32, 17, seed)); },
  };
  int seed = 0;
  for (int i = 0; i < 18; ++i) {
    if (i == 7) c.good("gray.jpg", encode_jpeg(40, 30, 1, seed++, 0));
    else c.good(fmt::format("baseline_{:02d}.jpg", i), encode_jpeg(24 + 5 * i, 18 + 3 * (i % 6), 3, seed++, 0));
    if (i % 3 == 0 && i / 3 < int(refused.size())) refused[size_t(i / 3)](seed++);
  }
  refused.back()(seed++);
  // 25 good images: 25 = 3 * 8 + 1 = 7 * 3 + 4, so batches of 3 and 7 end partial.

  std::vector<uint8_t> jpeg = encode_jpeg(64, 48, 3, seed++, 0);
  c.bad("truncated.jpg", std::vector<uint8_t>(jpeg.begin(), jpeg.begin() + long(jpeg.size() / 2)), "corrupt");
  c.bad("empty.jpg", {}, "empty");
  std::string text = "not a photo, just some notes\n";
  c.bad("notes.jpg", std::vector<uint8_t>(text.begin(), text.end()), "unsupported");
  // Listed, then gone before it was read.
  c.want_error[c.dir.file("vanished.jpg")] = "unreadable";
  c.files.push_back({c.dir.file("vanished.jpg"), 1234, 0});
}

// ---- Running and checking ----

struct Result {
  TagStats stats;
  std::vector<TagRecord> records;
  int sink_calls = 0;
  std::set<std::thread::id> sink_threads;
};

// Runs the tagger; a run that has not ended after a minute is a hang: the
// test binary exits with a message instead of waiting for ctest's timeout.
Result run_tagger(FakeModel& model, const TaggerOptions& o, const Corpus& c,
                  const std::function<void(std::vector<TagRecord>&)>& also = {}) {
  Result r;
  model.batch_size = o.batch;
  Tagger tagger(model, o);
  std::packaged_task<TagStats()> task([&] {
    return tagger.run(c.files, [&](std::vector<TagRecord>& group) {
      ++r.sink_calls;
      r.sink_threads.insert(std::this_thread::get_id());
      if (also) also(group);
      r.records.insert(r.records.end(), group.begin(), group.end());
    });
  });
  std::future<TagStats> done = task.get_future();
  std::thread t(std::move(task));
  if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "tagger run (%d GPU decoders, %d buffers, batch %d, %d CPU decoders) did not end within 60 s: hung\n",
                 int(o.gpu_decoders.size()), o.buffers, o.batch, o.decoders);
    std::_Exit(3);
  }
  t.join();
  r.stats = done.get();  // rethrows the run's error
  return r;
}

// Every file has exactly one record, the right tag or error kind, and the
// counts agree. Returns how many good files each decoder ("cpu", "gpu") did.
std::map<std::string, int> check_records(const Corpus& c, const Result& r, bool decode_only = false) {
  std::map<std::string, int> by;
  std::map<std::string, int> seen;
  for (const TagRecord& rec : r.records) {
    SCOPED_TRACE(rec.path);
    ++seen[rec.path];
    EXPECT_EQ(rec.model_id, "fake-mean@1");
    if (c.want.count(rec.path)) {
      EXPECT_TRUE(rec.ok) << rec.error_kind << ": " << rec.error;
      const Want& want = c.want.at(rec.path);
      EXPECT_EQ(rec.width, want.width);
      EXPECT_EQ(rec.height, want.height);
      EXPECT_FALSE(rec.content_hash.empty());
      if (decode_only) {
        EXPECT_TRUE(rec.tags.empty());
        EXPECT_TRUE(rec.objects.empty());
        ++by["none"];
        continue;
      }
      if (rec.tags.size() != 2) {
        ADD_FAILURE() << rec.tags.size() << " tags";
        continue;
      }
      const std::string& got = rec.tags[0].label;
      EXPECT_EQ(got.substr(4), want.tag) << "the tag of another image";
      EXPECT_EQ(rec.tags[1].label, want.size) << "the size of another image";
      if (rec.objects.size() == 1) {
        const DetectedObject& o = rec.objects[0];
        EXPECT_EQ(o.label, got) << "the object of another image";
        EXPECT_EQ(o.score, 0.75f);
        EXPECT_EQ(o.box.x2, float(want.width)) << "the box of another image";
        EXPECT_EQ(o.box.y2, float(want.height)) << "the box of another image";
      } else {
        ADD_FAILURE() << rec.objects.size() << " objects";
      }
      ++by[got.substr(0, 3)];
    } else if (c.want_error.count(rec.path)) {
      EXPECT_FALSE(rec.ok);
      EXPECT_EQ(rec.error_kind, c.want_error.at(rec.path)) << rec.error;
      EXPECT_FALSE(rec.error.empty());
      EXPECT_TRUE(rec.tags.empty());
      EXPECT_TRUE(rec.objects.empty()) << "objects for a file that failed";
    } else {
      ADD_FAILURE() << "a record for a file not asked for";
    }
  }
  for (const InputFile& f : c.files) EXPECT_EQ(seen[f.path], 1) << f.path << ": records";

  std::map<std::string, int64_t> failures;
  for (const auto& [path, kind] : c.want_error) ++failures[kind];
  EXPECT_EQ(r.stats.files, int64_t(c.files.size()));
  EXPECT_EQ(r.stats.tagged, int64_t(c.want.size()));
  EXPECT_EQ(r.stats.failed, int64_t(c.want_error.size()));
  EXPECT_EQ(r.stats.failures, failures);
  EXPECT_EQ(r.sink_threads.size(), 1u) << "the sink is called from one thread";
  return by;
}

TaggerOptions options(int batch, int decoders) {
  TaggerOptions o;
  o.batch = batch;
  o.decoders = decoders;
  o.stall = std::chrono::milliseconds(20);
  return o;
}

// `n` fake GPU decoders sharing `progress`, each added to o.gpu_decoders.
std::vector<std::unique_ptr<FakeGpuDecoder>> add_fake_gpus(TaggerOptions& o, GpuProgress& progress, const Corpus& c,
                                                           int n) {
  std::vector<std::unique_ptr<FakeGpuDecoder>> fakes;
  for (int g = 0; g < n; ++g) {
    fakes.push_back(std::make_unique<FakeGpuDecoder>(progress, c.gpu_fails));
    o.gpu_decoders.push_back(fakes.back().get());
  }
  return fakes;
}

}  // namespace

TEST(Tagger, EveryFileOneRecordWithItsOwnTag) {
  Corpus c;
  for (int batch : {1, 3, 7}) {
    for (int decoders = 1; decoders <= 3; ++decoders) {
      SCOPED_TRACE(fmt::format("batch {}, decoders {}", batch, decoders));
      FakeModel model;
      Result r = run_tagger(model, options(batch, decoders), c);
      std::map<std::string, int> by = check_records(c, r);
      EXPECT_EQ(by["cpu"], int(c.want.size()));
      EXPECT_EQ(model.bad_calls, 0);
      EXPECT_EQ(r.stats.decoders, decoders);
      EXPECT_EQ(r.stats.gpu_decoded, 0);
      int good = int(c.want.size());
      EXPECT_GE(r.stats.batches, (good + batch - 1) / batch);
      EXPECT_EQ(model.tag_calls, r.stats.batches);
      // 25 good images do not fill whole batches of 3 or 7: the last one
      // (at least) went out partial rather than waiting forever.
      if (good % batch != 0) {
        EXPECT_GE(r.stats.partial_batches, 1);
      }
    }
  }
}

TEST(Tagger, GpuDecodersShareTheFilesAndHandRefusedOnesToTheCpu) {
  Corpus c;
  // The truncated JPEG looks baseline to supports(): a GPU decoder that
  // takes it fails it, and a CPU decoder gives it its "corrupt" record.
  for (int gpus : {1, 2}) {
    for (int batch : {1, 4}) {
      SCOPED_TRACE(fmt::format("{} GPU decoders, batch {}", gpus, batch));
      GpuProgress progress;
      TaggerOptions o = options(batch, 2);
      std::vector<std::unique_ptr<FakeGpuDecoder>> fakes = add_fake_gpus(o, progress, c, gpus);
      FakeModel model;
      // The CPU decoders (2, each holding at most one file) wait until the
      // GPU has decoded a file and refused one: it has then both for sure.
      model.hold_cpu_until_gpu(&progress, 1, 1, 1);
      Result r = run_tagger(model, o, c);
      std::map<std::string, int> by = check_records(c, r);
      EXPECT_EQ(model.bad_calls, 0);
      EXPECT_EQ(r.stats.gpu_decoders, gpus);
      EXPECT_GT(r.stats.gpu_decoded, 0);
      EXPECT_EQ(r.stats.gpu_decoded, progress.decoded);
      EXPECT_EQ(by["gpu"], progress.decoded) << "records written by the GPU decoders";
      EXPECT_EQ(by["cpu"] + by["gpu"], int(c.want.size()));
      EXPECT_GT(r.stats.gpu_refused, 0);
      EXPECT_EQ(r.stats.gpu_refused, progress.refused);
      // The parts of the engine threads' busy time fit inside it.
      const GpuDecoderTimes& g = r.stats.time.gpu;
      EXPECT_GT(g.on_gpu, 0);
      EXPECT_LE(g.on_gpu + g.read_wait + g.slot_wait + g.thumbnail_wait,
                r.stats.time.gpu_decode + 1e-9);
      // Every file the GPU refused got its record from a CPU decoder.
      for (const std::vector<uint8_t>& b : progress.refused_files) {
        std::string path = c.path_of(b);
        SCOPED_TRACE("refused by the GPU: " + path);
        for (const TagRecord& rec : r.records) {
          if (rec.path != path) continue;
          if (c.want.count(path)) {
            ASSERT_FALSE(rec.tags.empty());
            EXPECT_EQ(rec.tags[0].label.substr(0, 4), "cpu:");
          } else {
            EXPECT_FALSE(rec.ok);
          }
        }
      }
      // Progressive JPEGs, PNGs and the file the GPU fails on are the CPU's.
      for (const TagRecord& rec : r.records)
        if (c.progressive.count(rec.path) || rec.path.ends_with(".png") || rec.path.ends_with("gpufail.jpg")) {
          EXPECT_EQ(rec.tags.at(0).label.substr(0, 4), "cpu:") << rec.path;
        }
    }
  }
}

// A CPU decoder passes the baseline JPEGs it reads to the GPU decoders'
// backlog while it has room, and keeps the files the engines refuse. The
// backlog (48 files) holds this whole folder, so every baseline JPEG the
// engines decode is theirs; without the hand-over the files are shared.
TEST(Tagger, CpuDecodersPassBaselineJpegsToTheGpu) {
  Corpus c;
  for (bool pass : {true, false}) {
    for (int gpus : {1, 2}) {
      SCOPED_TRACE(fmt::format("{} GPU decoders, baseline to the GPU: {}", gpus, pass));
      GpuProgress progress;
      TaggerOptions o = options(4, 2);
      o.baseline_to_gpu = pass;
      o.gpu_decoders_required = true;  // the CPU decoders start once the engines are open
      std::vector<std::unique_ptr<FakeGpuDecoder>> fakes = add_fake_gpus(o, progress, c, gpus);
      FakeModel model;
      Result r = run_tagger(model, o, c);
      std::map<std::string, int> by = check_records(c, r);
      EXPECT_EQ(by["cpu"] + by["gpu"], int(c.want.size()));
      if (!pass) continue;
      for (const TagRecord& rec : r.records) {
        if (!c.want.count(rec.path)) continue;
        const bool engines_take = rec.path.ends_with(".jpg") && !c.progressive.count(rec.path) &&
                                  !rec.path.ends_with("gpufail.jpg");
        EXPECT_EQ(rec.tags.at(0).label.substr(0, 4), engines_take ? "gpu:" : "cpu:") << rec.path;
      }
    }
  }
}

// A GPU decoder that cannot open (no engines, no libnvjpeg) leaves its
// files to the others and says why; where GPU decoding was required, the run
// fails with that reason.
TEST(Tagger, GpuDecoderThatCannotOpenLeavesItsFilesToTheOthers) {
  Corpus c;
  for (int working : {0, 1}) {
    SCOPED_TRACE(fmt::format("{} working GPU decoder(s) beside the broken one", working));
    GpuProgress progress;
    TaggerOptions o = options(4, 2);
    std::vector<std::unique_ptr<FakeGpuDecoder>> fakes = add_fake_gpus(o, progress, c, 1 + working);
    fakes[0]->cannot_open = true;
    FakeModel model;
    Result r = run_tagger(model, o, c);
    std::map<std::string, int> by = check_records(c, r);
    EXPECT_EQ(r.stats.gpu_decoders_unopened, 1);
    EXPECT_EQ(r.stats.gpu_open_error, "fake GPU: no JPEG engines");
    EXPECT_EQ(by["cpu"] + by["gpu"], int(c.want.size()));
    if (working == 0) {
      EXPECT_EQ(by["gpu"], 0);
    }
    for (const auto& f : fakes) EXPECT_EQ(f->open_calls, 1);
  }
  GpuProgress progress;
  FakeGpuDecoder broken(progress, c.gpu_fails);
  broken.cannot_open = true;
  TaggerOptions o = options(4, 2);
  o.gpu_decoders.push_back(&broken);
  o.gpu_decoders_required = true;
  FakeModel model;
  try {
    run_tagger(model, o, c);
    ADD_FAILURE() << "a required GPU decoder did not open, yet the run ended";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fake GPU: no JPEG engines"), std::string::npos)
        << e.what();
  }
}

// Where GPU decoding is required (--nvjpeg on) the CPU decoders start on
// the files only once the GPU decoders have opened: before, a CPU decoder
// could take every file of a small folder while the engines opened, and the
// run asked to use them used them for nothing. Without the requirement they
// start at once (not asserted: how many files they take meanwhile is a
// matter of timing); every file gets its record either way.
TEST(Tagger, RequiredGpuDecodersOpenBeforeTheCpuTakesFiles) {
  Corpus c;
  for (bool required : {true, false}) {
    SCOPED_TRACE(required ? "GPU decoding required" : "GPU decoding wanted");
    GpuProgress progress;
    TaggerOptions o = options(4, 1);
    o.gpu_decoders_required = required;
    std::vector<std::unique_ptr<FakeGpuDecoder>> fakes = add_fake_gpus(o, progress, c, 1);
    FakeModel model;
    fakes[0]->open_ms = 300;
    fakes[0]->cpu_writes = &model.cpu_writes;
    Result r = run_tagger(model, o, c);
    std::map<std::string, int> by = check_records(c, r);
    EXPECT_EQ(by["cpu"] + by["gpu"], int(c.want.size()));
    if (required) EXPECT_EQ(fakes[0]->cpu_writes_when_open, 0);
  }
}

TEST(Tagger, GpuDecoderFailureStopsTheRun) {
  Corpus c;
  for (int gpus : {1, 2}) {
    SCOPED_TRACE(fmt::format("{} GPU decoders", gpus));
    GpuProgress progress;
    TaggerOptions o = options(4, 2);
    std::vector<std::unique_ptr<FakeGpuDecoder>> fakes = add_fake_gpus(o, progress, c, gpus);
    for (const auto& f : fakes) f->throw_in_decode = true;
    FakeModel model;
    // The CPU decoders (holding a slot each) wait for the GPU to fail first.
    model.hold_cpu_until_gpu(&progress, 1, 0, 0);
    try {
      run_tagger(model, o, c);
      ADD_FAILURE() << "the run ended without the GPU decoder's error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("fake GPU: device lost"), std::string::npos) << e.what();
    }
  }
}

// A file whose slot could not be written fails alone: the model's result
// for its slot (tags, objects) is not given to it, nor to any other file.
TEST(Tagger, FileWhoseSlotFailedGetsNoTagsOrObjects) {
  Corpus c;
  const std::string gray = c.dir.file("gray.jpg");
  ASSERT_EQ(c.want.erase(gray), 1u);
  c.want_error[gray] = "failed";
  for (int batch : {1, 4}) {
    SCOPED_TRACE(fmt::format("batch {}", batch));
    FakeModel model;
    model.refuse_gray = true;
    Result r = run_tagger(model, options(batch, 2), c);
    check_records(c, r);
    for (const TagRecord& rec : r.records) {
      if (rec.path == gray) {
        EXPECT_NE(rec.error.find("gray images refused"), std::string::npos) << rec.error;
      }
    }
  }
}

TEST(Tagger, DecodeOnlyRunsNoNetwork) {
  Corpus c;
  for (int batch : {1, 7}) {
    SCOPED_TRACE(fmt::format("batch {}", batch));
    FakeModel model;
    TaggerOptions o = options(batch, 2);
    o.decode_only = true;
    Result r = run_tagger(model, o, c);
    std::map<std::string, int> by = check_records(c, r, true);
    EXPECT_EQ(by["none"], int(c.want.size()));
    EXPECT_EQ(model.tag_calls, 0);
    EXPECT_TRUE(r.stats.decode_only);
    for (const TagRecord& rec : r.records) EXPECT_EQ(rec.infer_ms, 0) << rec.path;
  }
}

TEST(Tagger, SinkErrorStopsTheRun) {
  Corpus c;
  for (int decoders : {1, 3}) {
    SCOPED_TRACE(fmt::format("decoders {}", decoders));
    FakeModel model;
    int calls = 0;
    try {
      run_tagger(model, options(3, decoders), c, [&](std::vector<TagRecord>&) {
        ++calls;
        throw Error("catalog: disk full");
      });
      ADD_FAILURE() << "the run ended without the sink's error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("disk full"), std::string::npos) << e.what();
    }
    EXPECT_EQ(calls, 1) << "the sink is not called again after it failed";
  }
}

TEST(Tagger, ModelErrorStopsTheRun) {
  Corpus c;
  FakeModel model;
  model.throw_in_tag = true;
  try {
    run_tagger(model, options(3, 2), c);
    ADD_FAILURE() << "the run ended without the model's error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of luck"), std::string::npos) << e.what();
  }
}

// Many runs with GPU decoders claiming slots for whole groups beside CPU
// decoders claiming one at a time: no configuration may hang (a GPU decoder
// holding slots in every buffer while it waits for more would: no batch
// could complete), and every run gives every file its one right record.
TEST(Tagger, GpuGroupsNeverDeadlockTheRing) {
  Corpus c;
  for (int it = 0; it < 600; ++it) {
    int gpus = 1 + it % 4, buffers = 2 + it % 2, batch = 2 + it % 7, decoders = 1 + it % 5;
    SCOPED_TRACE(fmt::format("{} GPU decoders, {} buffers, batch {}, {} CPU decoders", gpus, buffers, batch, decoders));
    GpuProgress progress;
    TaggerOptions o = options(batch, decoders);
    o.buffers = buffers;
    std::vector<std::unique_ptr<FakeGpuDecoder>> fakes = add_fake_gpus(o, progress, c, gpus);
    FakeModel model;
    Result r = run_tagger(model, o, c);
    check_records(c, r);
    if (::testing::Test::HasFailure()) break;
  }
}
