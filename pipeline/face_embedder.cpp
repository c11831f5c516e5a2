#include "pipeline/face_embedder.h"

#include <algorithm>
#include <cmath>

#include "formats/load_model.h"
#include "pipeline/model_store.h"
#include "profile/zone.h"

namespace tandem::pipeline {

namespace {

const char* const kDescriptor = "global_pooling/Mean";
const char* const kGender = "gender_pred/Sigmoid:0";
const char* const kAge = "age_pred/Softmax:0";

Graph load_faceres(const FaceEmbedderOptions& o) {
  ModelLoadOptions lo;
  lo.tfjs.outputs = {kDescriptor, kGender, kAge};
  lo.tfjs.dynamic_batch = true;
  Graph g = load_model(resolve_model(o.model), lo);
  return o.rewrite ? o.rewrite(std::move(g)) : g;
}

}  // namespace

float age_of(const float* bins, int count) {
  if (count <= 0) return 0;
  const int best = int(std::max_element(bins, bins + count) - bins);
  const float below = best > 0 ? bins[best - 1] : 0.f, above = best + 1 < count ? bins[best + 1] : 0.f;
  const float age = below > above ? 10.f * float(best) - 100.f * below : 10.f * float(best) + 100.f * above;
  return std::round(age) / 10.f;
}

float descriptor_similarity(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.empty() || a.size() != b.size()) return 0;
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += double(a[i] - b[i]) * double(a[i] - b[i]);
  const double s = (0.8 - 0.05 * std::sqrt(sum)) / 0.6;
  return float(std::clamp(s, 0.0, 1.0));
}

FaceEmbedder::FaceEmbedder(const FaceEmbedderOptions& options)
    : options_(options),
      session_(load_faceres(options),
               SessionOptions::on(options.device, options.precision, options.threads, options.strict_device)) {
  std::vector<TensorDesc> in = session_.input_descs();
  ErrorContext ctx{options.model, "", "", ""};
  check(in.size() == 1 && in[0].shape.size() == 4 && in[0].shape[3] == 3 && in[0].shape[1] == in[0].shape[2] &&
            in[0].shape[1] > 0,
        "a face recognition model needs one square [N, S, S, 3] image input", ctx);
  size_ = int(in[0].shape[1]);
}

std::vector<FaceTraits> FaceEmbedder::describe(const Tensor& crops) {
  std::vector<Tensor> out;
  {
    TANDEM_ZONE_CAT("face recognition network", "faces");
    out = session_.run({crops});
  }
  const int64_t n = crops.dim(0);
  const Tensor &desc = out.at(0), &gender = out.at(1), &age = out.at(2);
  ErrorContext ctx{options_.model, "", "", desc.desc().str() + ", " + gender.desc().str() + ", " + age.desc().str()};
  check(desc.rank() == 2 && desc.dim(0) == n && gender.numel() == n && age.rank() == 2 && age.dim(0) == n,
        "FaceRes outputs are not a descriptor [N,D], gender [N,1] and age bins [N,B]", ctx);
  const int64_t d = desc.dim(1), bins = age.dim(1);
  std::vector<FaceTraits> result(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    FaceTraits& t = result[size_t(i)];
    t.descriptor.assign(desc.data<float>() + i * d, desc.data<float>() + (i + 1) * d);
    t.gender_score = gender.data<float>()[i];
    t.age = age_of(age.data<float>() + i * bins, int(bins));
  }
  return result;
}

}  // namespace tandem::pipeline
