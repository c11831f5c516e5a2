// DataLoader: shuffled epochs are permutations, batches are the same for any
// worker count and for a run resumed mid-epoch, drop_last, worker errors
// surface at their batch; augmentation (crop with padding, flip) against
// numpy's pad + slice + reverse, byte-exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/numpy_ref.h"
#include "train/data/data_loader.h"

namespace tandem::train {
namespace {

// Sample i: a [2,5,6] image whose pixel (c,y,x) is i*1000 + c*100 + y*10 + x
// (so any pixel tells which sample and where), label i % 7.
class IndexDataset : public Dataset {
 public:
  explicit IndexDataset(int64_t n, int64_t fail_at = -1, int64_t bad_label_at = -1)
      : n_(n), fail_at_(fail_at), bad_label_at_(bad_label_at) {}
  int64_t size() const override { return n_; }
  Shape image_shape() const override { return {2, 5, 6}; }
  int64_t num_classes() const override { return 7; }
  Sample get(int64_t i) const override {
    check(i != fail_at_, "cannot decode sample " + std::to_string(i), ErrorContext{"sample.png", {}, {}, {}});
    Sample s{Tensor::empty(DType::f32, image_shape()), i == bad_label_at_ ? 7 : i % 7};
    float* p = s.image.data<float>();
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t y = 0; y < 5; ++y)
        for (int64_t x = 0; x < 6; ++x) *p++ = float(i * 1000 + c * 100 + y * 10 + x);
    return s;
  }

 private:
  int64_t n_, fail_at_, bad_label_at_;
};

// A dataset whose samples do not have the shape it declares.
class WrongShapeDataset : public IndexDataset {
 public:
  using IndexDataset::IndexDataset;
  Sample get(int64_t i) const override { return Sample{Tensor::zeros(DType::f32, {2, 6, 5}), 0}; }
};

std::vector<Batch> epoch(DataLoader& loader, int64_t e, int64_t first = 0) {
  loader.start_epoch(e, first);
  std::vector<Batch> out;
  while (auto b = loader.next()) out.push_back(std::move(*b));
  return out;
}

LoaderOptions options(int workers, uint64_t seed = 5) {
  LoaderOptions o;
  o.batch_size = 4;
  o.seed = seed;
  o.workers = workers;
  o.augment = Augmentation{2, true, -1.0f};
  return o;
}

void expect_same_batches(const std::vector<Batch>& a, const std::vector<Batch>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    testing::expect_same(a[i].images, b[i].images, what + " images of batch " + std::to_string(i));
    testing::expect_same(a[i].labels, b[i].labels, what + " labels of batch " + std::to_string(i));
  }
}

TEST(DataLoader, ShuffledEpochIsAPermutationWithMatchingLabels) {
  IndexDataset data(23);
  LoaderOptions o = options(2);
  o.augment = {};
  DataLoader loader(data, o);
  std::vector<Batch> batches = epoch(loader, 0);
  ASSERT_EQ(batches.size(), 6u);
  EXPECT_EQ(batches.back().images.shape(), (Shape{3, 2, 5, 6}));
  std::vector<int64_t> seen;
  for (const Batch& b : batches)
    for (int64_t k = 0; k < b.labels.numel(); ++k) {
      int64_t i = int64_t(b.images.data<float>()[k * 60]) / 1000;
      EXPECT_EQ(b.labels.data<int64_t>()[k], i % 7);
      EXPECT_EQ(b.images.data<float>()[k * 60 + 59], float(i * 1000 + 145));
      seen.push_back(i);
    }
  EXPECT_EQ(seen, loader.order(0));
  std::vector<int64_t> sorted = seen;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 23; ++i) EXPECT_EQ(sorted[size_t(i)], i);
  EXPECT_NE(seen, sorted) << "epoch 0 was not shuffled";
  EXPECT_NE(loader.order(0), loader.order(1));
  o.shuffle = false;
  EXPECT_EQ(DataLoader(data, o).order(3), sorted);
}

TEST(DataLoader, SameSeedGivesSameBatchesForAnyWorkerCount) {
  IndexDataset data(37);
  DataLoader serial(data, options(0));
  std::vector<Batch> want = epoch(serial, 2);
  for (int workers : {1, 3, 8}) {
    DataLoader parallel(data, options(workers));
    expect_same_batches(epoch(parallel, 2), want, std::to_string(workers) + " workers");
  }
  EXPECT_NE(DataLoader(data, options(3, 6)).order(2), serial.order(2)) << "another seed, the same order";
}

TEST(DataLoader, ResumingMidEpochAndMovingToTheNextEpochGiveTheSameBatches) {
  IndexDataset data(30);
  DataLoader loader(data, options(2));
  std::vector<Batch> full = epoch(loader, 4);
  std::vector<Batch> rest = epoch(loader, 4, 3);
  expect_same_batches(rest, std::vector<Batch>(full.begin() + 3, full.end()), "resumed");
  EXPECT_EQ(rest.front().index, 3);
  // The workers run on into the next epoch; what they made there is what a
  // fresh loader makes.
  std::vector<Batch> next_epoch = epoch(loader, 5);
  DataLoader fresh(data, options(3));
  expect_same_batches(next_epoch, epoch(fresh, 5), "epoch 5 after epoch 4");
  EXPECT_EQ(next_epoch.back().epoch, 5);
  // Stopping in the middle of an epoch and starting another is fine.
  loader.start_epoch(5);
  ASSERT_TRUE(loader.next().has_value());
  EXPECT_EQ(epoch(loader, 6).size(), full.size());
}

TEST(DataLoader, DropLastDropsOnlyAShortFinalBatch) {
  IndexDataset data(10);
  LoaderOptions o = options(2);
  EXPECT_EQ(DataLoader(data, o).batches_per_epoch(), 3);
  o.drop_last = true;
  DataLoader loader(data, o);
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  std::vector<Batch> batches = epoch(loader, 0);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].images.shape(), (Shape{4, 2, 5, 6}));
  o.batch_size = 5;
  EXPECT_EQ(DataLoader(data, o).batches_per_epoch(), 2);
}

// Data-parallel ranks: shard r of each global batch, concatenated over the
// shards in rank order, is the batch of one loader with the global batch
// size (images, augmentation and labels byte for byte), including an
// unevenly split short last batch; a last batch with fewer samples than
// shards is dropped, so no rank gets an empty one.
TEST(DataLoader, ShardsTogetherAreTheGlobalBatch) {
  for (int64_t n : {37, 33}) {  // 37 % 12 = 1 < 3 shards: dropped; 33 % 12 = 9: split 3/3/3
    IndexDataset data(n);
    LoaderOptions whole = options(2);
    whole.batch_size = 12;
    DataLoader one(data, whole);
    std::vector<Batch> want = epoch(one, 1);
    if (n % 12 < 3) want.pop_back();
    std::vector<std::vector<Batch>> shards;
    for (int r = 0; r < 3; ++r) {
      LoaderOptions o = options(r % 2);  // the worker count does not matter
      o.shard = r;
      o.shards = 3;
      DataLoader loader(data, o);
      EXPECT_EQ(loader.global_batch_size(), 12);
      EXPECT_EQ(loader.batches_per_epoch(), int64_t(want.size())) << n;
      shards.push_back(epoch(loader, 1));
    }
    for (size_t b = 0; b < want.size(); ++b) {
      int64_t row = 0, pixels = 60;
      for (int r = 0; r < 3; ++r) {
        const Batch& part = shards[size_t(r)][b];
        ASSERT_GT(part.labels.numel(), 0) << "rank " << r << " batch " << b;
        EXPECT_EQ(part.global_samples, want[b].labels.numel());
        for (int64_t k = 0; k < part.labels.numel(); ++k, ++row) {
          EXPECT_EQ(part.labels.data<int64_t>()[k], want[b].labels.data<int64_t>()[row]);
          for (int64_t p = 0; p < pixels; ++p)
            ASSERT_EQ(part.images.data<float>()[k * pixels + p], want[b].images.data<float>()[row * pixels + p])
                << "n " << n << " batch " << b << " rank " << r << " sample " << k;
        }
      }
      EXPECT_EQ(row, want[b].labels.numel()) << "the shards cover batch " << b;
    }
  }
  IndexDataset data(8);
  LoaderOptions o = options(0);
  o.shard = 3;
  o.shards = 3;
  EXPECT_THROW(DataLoader(data, o), Error);
}

TEST(DataLoader, DatasetErrorsBadLabelsAndShapesSurfaceAtTheirBatch) {
  for (int workers : {0, 2}) {
    LoaderOptions o = options(workers);
    o.shuffle = false;
    IndexDataset failing(20, 9);
    DataLoader loader(failing, o);
    loader.start_epoch(0);
    EXPECT_TRUE(loader.next().has_value());
    EXPECT_TRUE(loader.next().has_value());
    try {
      loader.next();
      FAIL() << "batch 2 holds sample 9, which fails";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("sample.png"), std::string::npos) << e.what();
    }
    EXPECT_THROW(loader.next(), Error) << "the error repeats";
    IndexDataset bad_label(20, -1, 2);
    DataLoader labels(bad_label, o);
    labels.start_epoch(0);
    EXPECT_THROW(labels.next(), Error);
    WrongShapeDataset wrong(20);
    DataLoader shapes(wrong, o);
    shapes.start_epoch(0);
    EXPECT_THROW(shapes.next(), Error);
  }
  IndexDataset data(3);
  DataLoader loader(data, options(1));
  EXPECT_THROW(loader.next(), Error);  // before start_epoch
  EXPECT_THROW(loader.start_epoch(0, 2), Error);
}

TEST(Augment, CropAndFlipMatchNumpyPadSliceAndReverse) {
  IndexDataset data(1);
  Tensor src = data.get(0).image;
  Augmentation a{2, true, -1.0f};
  testing::NumpyChecks checks;
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u}) {
    Tensor dst = Tensor::empty(DType::f32, {2, 5, 6});
    augment_image(src.data<float>(), dst.data<float>(), 2, 5, 6, a, seed);
    AugmentChoice c = augment_choice(a, seed);
    Tensor choice = Tensor::from_vector(std::vector<int64_t>{c.dy, c.dx, c.flip}, {3});
    checks.add(dst,
               "dy, dx, flip = (int(v) for v in x1)\n"
               "p = np.pad(x0, ((0, 0), (2, 2), (2, 2)), constant_values=np.float32(-1))[:, dy:dy + 5, dx:dx + 6]\n"
               "r = p[:, :, ::-1] if flip else p",
               {src, choice}, "seed " + std::to_string(seed));
  }
  checks.check();
}

TEST(Augment, ChoicesCoverEveryOffsetAndBothFlips) {
  Augmentation a{3, true, 0};
  std::set<int64_t> dys, dxs;
  int flips = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    AugmentChoice c = augment_choice(a, seed);
    ASSERT_TRUE(c.dy >= 0 && c.dy <= 6 && c.dx >= 0 && c.dx <= 6);
    dys.insert(c.dy);
    dxs.insert(c.dx);
    flips += c.flip;
  }
  EXPECT_EQ(dys.size(), 7u);
  EXPECT_EQ(dxs.size(), 7u);
  EXPECT_GT(flips, 400);
  EXPECT_LT(flips, 600);
}

}  // namespace
}  // namespace tandem::train
