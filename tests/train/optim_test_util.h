#pragma once
// Shared by the optimizer and checkpoint tests: a toy quadratic objective
//   loss = sum_i 0.5 * a_i * (p_i - t_i)^2,  grad = a * (p - t)
// over a few parameters of different shapes (one without weight decay), whose
// gradient torch computes bit-identically (one float multiply and subtract),
// so a comparison with torch.optim measures only the update arithmetic.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tests/numpy_ref.h"
#include "train/parameter.h"

namespace tandem::testing {

// A double as Python source, exactly (std::to_string would print 1e-8 as 0.000000).
inline std::string py(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

struct Quadratic {
  std::vector<train::Parameter> params;
  std::vector<std::vector<float>> target, curvature;

  // Parameter shapes, in order (torch_setup() spells them for Python).
  static std::vector<Shape> shapes() { return {{4, 5}, {7}, {2, 3, 2}}; }

  explicit Quadratic(uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> value(-1, 1), curve(0.5f, 2.0f);
    const char* names[] = {"layer.weight", "layer.bias", "conv.weight"};
    for (size_t i = 0; i < shapes().size(); ++i) {
      train::Parameter p{names[i], Tensor::empty(DType::f32, shapes()[i]), Tensor::zeros(DType::f32, shapes()[i]),
                         i != 1};
      std::vector<float> t, a;
      for (int64_t k = 0; k < p.value.numel(); ++k) {
        p.value.data<float>()[k] = value(rng);
        t.push_back(value(rng));
        a.push_back(curve(rng));
      }
      params.push_back(std::move(p));
      target.push_back(std::move(t));
      curvature.push_back(std::move(a));
    }
  }

  train::ParameterList list() {
    train::ParameterList out;
    for (auto& p : params) out.push_back(&p);
    return out;
  }

  // grad = a * (p - t) + noise (the noise makes a checkpointed generator matter).
  void gradients(float noise = 0, std::mt19937_64* rng = nullptr) {
    for (size_t i = 0; i < params.size(); ++i) {
      float* p = params[i].value.data<float>();
      float* g = params[i].grad.data<float>();
      for (int64_t k = 0; k < params[i].value.numel(); ++k) {
        g[k] = curvature[i][size_t(k)] * (p[k] - target[i][size_t(k)]);
        if (rng) g[k] += noise * float(int64_t((*rng)() >> 40) - (int64_t(1) << 23)) / float(1 << 23);
      }
    }
  }

  // All values (or all of `tensors`) concatenated into one flat f32 tensor.
  static Tensor flat(const std::vector<Tensor>& tensors) {
    std::vector<float> all;
    for (const Tensor& t : tensors) all.insert(all.end(), t.data<float>(), t.data<float>() + t.numel());
    return Tensor::from_vector(all, {int64_t(all.size())});
  }
  Tensor values() const {
    std::vector<Tensor> v;
    for (const auto& p : params) v.push_back(p.value);
    return flat(v);
  }
  Tensor targets() const { return flat_of(target); }
  Tensor curvatures() const { return flat_of(curvature); }

  // Python that rebuilds this problem in torch from x0 (values), x1
  // (targets), x2 (curvatures): defines `ps` (torch Parameters), `ts`, `as_`,
  // `groups` (decayed / not decayed, as param groups) and `grads()`.
  static std::string torch_setup() {
    std::string shapes_py = "[";
    for (const Shape& s : shapes()) {
      shapes_py += "(";
      for (int64_t d : s) shapes_py += std::to_string(d) + ",";
      shapes_py += "),";
    }
    shapes_py += "]";
    return "import torch\n"
           "shapes = " + shapes_py + "\n"
           "def split(x):\n"
           "    out, o = [], 0\n"
           "    for s in shapes:\n"
           "        n = int(np.prod(s)); out.append(torch.tensor(x[o:o+n].reshape(s))); o += n\n"
           "    return out\n"
           "ps = [torch.nn.Parameter(v) for v in split(x0)]\n"
           "ts, as_ = split(x1), split(x2)\n"
           "decay = [ps[0], ps[2]]\n"
           "no_decay = [ps[1]]\n"
           "def grads():\n"
           "    for p, t, a in zip(ps, ts, as_):\n"
           "        p.grad = a * (p.detach() - t)\n"
           "def values():\n"
           "    return np.concatenate([p.detach().numpy().ravel() for p in ps])\n";
  }

 private:
  static Tensor flat_of(const std::vector<std::vector<float>>& parts) {
    std::vector<Tensor> v;
    for (const auto& p : parts) v.push_back(Tensor::from_vector(p, {int64_t(p.size())}));
    return flat(v);
  }
};

}  // namespace tandem::testing
