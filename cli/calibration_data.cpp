#include "cli/calibration_data.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

#include "formats/tensor_file.h"
#include "image/decode.h"
#include "pipeline/tag_model.h"
#include "pipeline/walk.h"

namespace tandem::cli {

namespace {

// Rows [begin, end) of t along dim 0.
Tensor rows(const Tensor& t, int64_t begin, int64_t end) {
  Shape s = t.shape();
  const int64_t row = t.numel() / std::max<int64_t>(1, s[0]);
  s[0] = end - begin;
  Tensor r = Tensor::empty(t.dtype(), s);
  const size_t bytes = size_t(row) * dtype_size(t.dtype());
  std::memcpy(r.raw(), static_cast<const char*>(t.raw()) + size_t(begin) * bytes,
              size_t(end - begin) * bytes);
  return r;
}

std::vector<Tensor> npy_batches(const CalibrationSource& o) {
  Tensor all = read_tensor_file(o.source);
  check(all.rank() >= 1 && all.dim(0) > 0,
        "no samples in " + o.source + " (" + all.desc().str() + ")");
  return batches_of(rows(all, 0, std::min<int64_t>(all.dim(0), o.samples)), o.batch);
}

// Up to o.samples images under the folder, through the model's own
// preprocessing; a file that fails to decode is named and skipped.
std::vector<Tensor> image_batches(const CalibrationSource& o) {
  pipeline::TagModelOptions to;
  to.model = o.model;
  to.threads = o.threads;
  std::unique_ptr<pipeline::TagModel> m = pipeline::load_tag_model(to);
  const std::vector<std::string> paths = calibration_photos(o.source);
  std::unique_ptr<pipeline::SlotWriter> writer = m->make_writer();
  std::vector<Tensor> batches;
  Tensor cur;
  int64_t filled = 0, used = 0;
  for (const std::string& p : paths) {
    if (used >= o.samples) break;
    image::Image img;
    try {
      img = image::decode_image_file(p, m->decode_min_width(), m->decode_min_height());
    } catch (const Error& e) {
      fmt::print(stderr, "tandem: {}: skipped: {}\n", p, e.what());
      continue;
    }
    if (filled == 0) cur = Tensor::empty(DType::f32, m->batch_shape(o.batch));
    writer->write(img, cur.data<float>() + size_t(filled) * m->slot_floats());
    ++used;
    if (++filled == o.batch) batches.push_back(std::move(cur)), filled = 0;
  }
  if (filled > 0 && batches.empty()) batches.push_back(rows(cur, 0, filled));
  check(!batches.empty(), "no readable image under " + o.source + " to calibrate with");
  return batches;
}

}  // namespace

std::vector<std::string> calibration_photos(const std::string& source) {
  pipeline::WalkResult w = pipeline::walk({source});
  std::vector<std::string> paths;
  for (const pipeline::WalkedFile& f : w.files) {
    if (f.is_image())
      paths.push_back(f.path);
    else if (pipeline::has_photo_extension(f.path))
      fmt::print(
          stderr,
          "tandem: {}: skipped: named like a photo, but its content is no image tandem reads\n",
          f.path);
  }
  for (const pipeline::WalkProblem& p : w.problems)
    fmt::print(stderr, "tandem: {}: skipped: {}\n", p.path, p.reason);
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::vector<Tensor> batches_of(const Tensor& samples, int64_t batch) {
  const int64_t n = samples.dim(0);
  std::vector<Tensor> b;
  for (int64_t i = 0; i < n; i += batch) b.push_back(rows(samples, i, std::min<int64_t>(n, i + batch)));
  // Equal shapes keep one compiled plan: the last partial batch goes.
  if (b.size() > 1 && b.back().dim(0) != b.front().dim(0)) b.pop_back();
  return b;
}

std::vector<Tensor> calibration_batches(const CalibrationSource& c) {
  const bool npy = std::filesystem::path(c.source).extension() == ".npy";
  return npy ? npy_batches(c) : image_batches(c);
}

}  // namespace tandem::cli
