#include "cli/face_calibration.h"

#include <fmt/core.h>

#include <algorithm>
#include <exception>

#include "cli/calibration_data.h"
#include "cli/parallel.h"
#include "core/error.h"
#include "core/shape.h"
#include "image/decode.h"
#include "image/preprocess.h"
#include "pipeline/face_crop.h"
#include "profile/zone.h"

namespace tandem::cli {

namespace {

std::string message_naming(const std::string& path, const std::exception& e) {
  if (const auto* te = dynamic_cast<const Error*>(&e))
    return te->with_context({path, "", "", ""}).what();
  return path + ": " + e.what();
}

}  // namespace

std::vector<FacePhoto> read_face_batch(const std::vector<std::string>& paths,
                                       const pipeline::FaceDetector& det, size_t first, size_t n,
                                       float* batch) {
  std::vector<FacePhoto> photos(n);
  const image::PreprocessConfig config = det.input_config();
  run_workers(n, [&](size_t w, size_t workers) {
    image::Preprocessor pre(config);
    image::DecodeOptions opt;
    opt.min_width = opt.min_height = det.input_size();
    image::Image img;
    for (size_t i = w; i < n; i += workers) {
      const std::string& path = paths[first + i];
      float* slot = batch + i * pre.output_size();
      try {
        TANDEM_ZONE_CAT("read+decode+resize", "faces");
        photos[i].bytes = image::read_file_bytes(path, opt.max_file_bytes);
        image::decode_image_into(img, photos[i].bytes, opt, path);
        photos[i].size = {img.full_width, img.full_height};
        pre.run(img, {slot, pre.output_size()});
      } catch (const std::exception& e) {
        photos[i].error = message_naming(path, e);
        std::fill(slot, slot + pre.output_size(), 0.f);
      }
    }
  });
  return photos;
}

namespace {

// The faces of --calibrate's photos, found and cropped as the faces to
// describe are: [F, size, size, 3], at most `limit` of them.
Tensor calibration_crops(const CommonOptions& opts, pipeline::FaceDetector& det, int batch,
                         int64_t size, int64_t limit) {
  const std::vector<std::string> paths = calibration_photos(opts.calibrate);
  const int64_t floats = size * size * 3;
  std::vector<float> crops;
  pipeline::FaceCropper cropper{int(size)};
  const int in = det.input_size();
  for (size_t first = 0; first < paths.size() && int64_t(crops.size()) < limit * floats;
       first += size_t(batch)) {
    const size_t n = std::min(paths.size() - first, size_t(batch));
    Tensor input = Tensor::empty(DType::f32, {int64_t(n), in, in, 3});
    std::vector<FacePhoto> photos = read_face_batch(paths, det, first, n, input.data<float>());
    std::vector<std::pair<int, int>> sizes;
    for (const FacePhoto& p : photos)
      sizes.push_back(p.error.empty() ? p.size : std::pair<int, int>{1, 1});
    const std::vector<std::vector<pipeline::Face>> faces = det.detect(input, sizes);
    for (size_t i = 0; i < n; ++i) {
      if (!photos[i].error.empty()) {
        fmt::print(stderr, "tandem: {}: skipped: {}\n", paths[first + i], photos[i].error);
        continue;
      }
      for (const pipeline::Face& f : faces[i]) {
        if (int64_t(crops.size()) >= limit * floats) break;
        crops.resize(crops.size() + size_t(floats));
        cropper.crop(photos[i].bytes, f, image::DecodeOptions{}, paths[first + i],
                     crops.data() + crops.size() - size_t(floats));
      }
    }
  }
  check(!crops.empty(),
        "no face found in the photos under " + opts.calibrate + " to calibrate FaceRes with");
  const int64_t count = int64_t(crops.size()) / floats;
  Tensor t = Tensor::empty(DType::f32, {count, size, size, 3});
  std::copy(crops.begin(), crops.end(), t.data<float>());
  return t;
}

}  // namespace

Graph quantized_faceres(Graph g, const CommonOptions& opts, pipeline::FaceDetector& det,
                        int batch) {
  check(!opts.calibrate.empty(), "--precision int8 needs --calibrate DIR: photos with faces");
  const Shape& in = g.value(g.inputs.at(0)).shape;
  check(in.size() == 4 && in[1] > 0, "FaceRes takes [N, S, S, 3] crops, got " + shape_str(in));
  const Tensor crops = calibration_crops(opts, det, batch, in[1], 64);
  return quantize_for_device(std::move(g), batches_of(crops, 8), opts, "FaceRes",
                             std::to_string(crops.dim(0)) + " faces of " + opts.calibrate);
}

std::function<Graph(Graph)> faceres_int8_rewrite(const CommonOptions& opts,
                                                 const pipeline::FaceDetectorOptions& detector) {
  return [opts, detector](Graph g) {
    pipeline::FaceDetector det(detector);
    return quantized_faceres(std::move(g), opts, det, 8);
  };
}

}  // namespace tandem::cli
