#include "train/data/data_loader.h"

#include <algorithm>
#include <numeric>

#include "profile/zone.h"
#include "train/data/seeding.h"

namespace tandem::train {

namespace {

// Keeps the order stream apart from the per-sample streams.
constexpr uint64_t kOrderStream = ~uint64_t(0);

void check_options(const Dataset& data, const LoaderOptions& o) {
  check(o.batch_size > 0, "batch size must be > 0, got " + std::to_string(o.batch_size));
  check(o.workers >= 0 && o.prefetch > 0, "loader needs workers >= 0 and prefetch > 0");
  check(o.shards >= 1 && o.shard >= 0 && o.shard < o.shards,
        "loader shard " + std::to_string(o.shard) + " of " + std::to_string(o.shards) + " does not exist");
  check(o.augment.crop_padding >= 0, "crop padding must be >= 0");
  Shape s = data.image_shape();
  check(s.size() == 3, "dataset images must be [C,H,W], got " + shape_str(s));
}

}  // namespace

DataLoader::DataLoader(const Dataset& data, const LoaderOptions& options) : data_(data), options_(options) {
  check_options(data, options);
}

DataLoader::~DataLoader() { stop(); }

int64_t DataLoader::batches_per_epoch() const {
  const int64_t n = data_.size(), b = options_.batch_size * options_.shards;
  const bool last_fits = n % b >= options_.shards;  // every shard gets a sample of a short last batch
  return options_.drop_last || !last_fits ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  std::vector<int64_t> order(size_t(data_.size()));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (!options_.shuffle) return order;
  SplitMix64 rng(mix_seed(options_.seed, uint64_t(epoch), kOrderStream));
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

Batch DataLoader::make_batch(int64_t global, OrderCache& cache) const {
  TANDEM_ZONE_CAT("make batch", "data");
  const int64_t epoch = global / batches_per_epoch(), b = global % batches_per_epoch();
  if (cache.epoch != epoch) cache = OrderCache{epoch, order(epoch)};
  const int64_t global_batch = options_.batch_size * options_.shards;
  const int64_t whole = std::min(global_batch, data_.size() - b * global_batch);
  const int64_t shard = options_.shard, shards = options_.shards;
  const int64_t begin = b * global_batch + shard * whole / shards;
  const int64_t count = (shard + 1) * whole / shards - shard * whole / shards;
  Shape image = data_.image_shape();
  const int64_t pixels = shape_numel(image);
  Batch out{Tensor::empty(DType::f32, {count, image[0], image[1], image[2]}), Tensor::empty(DType::i64, {count}),
            epoch, b, whole};
  std::vector<float> raw(options_.augment.active() ? size_t(pixels) : 0);
  for (int64_t k = 0; k < count; ++k) {
    int64_t i = cache.order[size_t(begin + k)];
    float* dst = out.images.data<float>() + k * pixels;
    int64_t label = data_.read_into(i, options_.augment.active() ? raw.data() : dst);
    check(label >= 0 && label < data_.num_classes(), "dataset sample " + std::to_string(i) + " has label " +
                                                         std::to_string(label) + ", outside [0, " +
                                                         std::to_string(data_.num_classes()) + ")");
    out.labels.data<int64_t>()[k] = label;
    if (options_.augment.active())
      augment_image(raw.data(), dst, image[0], image[1], image[2], options_.augment,
                    mix_seed(options_.seed, uint64_t(epoch), uint64_t(i)));
  }
  return out;
}

DataLoader::Made DataLoader::make_or_capture(int64_t global, OrderCache& cache) const {
  try {
    return Made{make_batch(global, cache), nullptr};
  } catch (...) {
    return Made{{}, std::current_exception()};
  }
}

void DataLoader::work(size_t worker, int64_t first) {
  TANDEM_THREAD_NAME(std::string(kLoaderThreadPrefix) + std::to_string(worker));
  OrderCache cache;
  const int64_t stride = int64_t(queues_.size());
  for (int64_t g = first + int64_t(worker);; g += stride) {
    Made made = make_or_capture(g, cache);
    bool failed = made.error != nullptr;
    if (!queues_[worker]->push(std::move(made)) || failed) return;
  }
}

void DataLoader::start_epoch(int64_t epoch, int64_t first_batch) {
  const int64_t per_epoch = batches_per_epoch();
  check(epoch >= 0 && first_batch >= 0 && first_batch <= per_epoch,
        "cannot start epoch " + std::to_string(epoch) + " at batch " + std::to_string(first_batch) + " of " +
            std::to_string(per_epoch));
  const int64_t first = epoch * per_epoch + first_batch;
  if (!started_ || failure_ || first != next_) restart(first);
  started_ = true;
  end_ = (epoch + 1) * per_epoch;
}

void DataLoader::restart(int64_t first) {
  stop();
  failure_ = nullptr;
  next_ = stream_start_ = first;
  if (batches_per_epoch() == 0) return;  // nothing to make
  for (int w = 0; w < options_.workers; ++w) queues_.push_back(std::make_unique<Queue>(size_t(options_.prefetch)));
  for (size_t w = 0; w < queues_.size(); ++w) threads_.emplace_back([this, w, first] { work(w, first); });
}

std::optional<Batch> DataLoader::next() {
  check(started_, "DataLoader::next() before start_epoch()");
  if (failure_) std::rethrow_exception(failure_);
  if (next_ >= end_) return std::nullopt;
  int64_t g = next_++;
  Made made = queues_.empty() ? make_or_capture(g, serial_cache_)
                              : *queues_[size_t(g - stream_start_) % queues_.size()]->pop();
  if (made.error) {
    // That worker has stopped: the stream cannot go on past this batch.
    failure_ = made.error;
    std::rethrow_exception(failure_);
  }
  return std::move(made.batch);
}

void DataLoader::stop() {
  for (auto& q : queues_) q->close();
  for (auto& t : threads_) t.join();
  threads_.clear();
  queues_.clear();
}

}  // namespace tandem::train
