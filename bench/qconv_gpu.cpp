// What 8-bit convolutions buy on this GPU, before a model runs them: each
// convolution of ResNet-50 (batch 256, 224x224, channels-last) as one fused
// cuDNN graph -- convolution, per-channel scale, bias, [residual,] ReLU,
// output in the input's precision -- in fp16 (the peer: tandem's fp16 path
// runs the same convolutions), int8 (s8 activations and weights, int32
// accumulation) and fp8 E4M3 (fp32 accumulation). Each graph's best of
// cuDNN's first few plans is timed; the table sums them with each layer's
// count in the network, so the ratio is the convolutions' share of a
// forward pass, not the whole of it.
//   qconv_gpu [--batch 256] [--plans 3] [--reps 20] [--only int8,fp8,...]
// Prints a table and one JSON line. Without a GPU it says so and exits 0.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "cuda/context.h"
#include "cuda/cudnn_graph.h"

using namespace tandem;
using namespace tandem::cuda;
namespace cg = tandem::cuda::cudnn_graph;

namespace {

struct Layer {
  const char* name;
  int64_t c, k, hw, r, stride, count;
  bool residual;
};

// torchvision's ResNet-50 (v1.5: the stride on the 3x3), its 53 convolutions
// grouped by shape.
const Layer kResnet50[] = {
    {"stem 7x7 3-64 s2", 3, 64, 224, 7, 2, 1, false},
    {"l1 1x1 64-64", 64, 64, 56, 1, 1, 1, false},
    {"l1 1x1 256-64", 256, 64, 56, 1, 1, 2, false},
    {"l1 3x3 64-64", 64, 64, 56, 3, 1, 3, false},
    {"l1 1x1 64-256 +r", 64, 256, 56, 1, 1, 3, true},
    {"l1 down 64-256", 64, 256, 56, 1, 1, 1, false},
    {"l2 1x1 256-128", 256, 128, 56, 1, 1, 1, false},
    {"l2 3x3 128 s2", 128, 128, 56, 3, 2, 1, false},
    {"l2 1x1 512-128", 512, 128, 28, 1, 1, 3, false},
    {"l2 3x3 128", 128, 128, 28, 3, 1, 3, false},
    {"l2 1x1 128-512 +r", 128, 512, 28, 1, 1, 4, true},
    {"l2 down 256-512 s2", 256, 512, 56, 1, 2, 1, false},
    {"l3 1x1 512-256", 512, 256, 28, 1, 1, 1, false},
    {"l3 3x3 256 s2", 256, 256, 28, 3, 2, 1, false},
    {"l3 1x1 1024-256", 1024, 256, 14, 1, 1, 5, false},
    {"l3 3x3 256", 256, 256, 14, 3, 1, 5, false},
    {"l3 1x1 256-1024 +r", 256, 1024, 14, 1, 1, 6, true},
    {"l3 down 512-1024 s2", 512, 1024, 28, 1, 2, 1, false},
    {"l4 1x1 1024-512", 1024, 512, 14, 1, 1, 1, false},
    {"l4 3x3 512 s2", 512, 512, 14, 3, 2, 1, false},
    {"l4 1x1 2048-512", 2048, 512, 7, 1, 1, 2, false},
    {"l4 3x3 512", 512, 512, 7, 3, 1, 2, false},
    {"l4 1x1 512-2048 +r", 512, 2048, 7, 1, 1, 3, true},
    {"l4 down 1024-2048 s2", 1024, 2048, 14, 1, 2, 1, false},
};

struct Precision {
  const char* name;
  cudnnDataType_t io, compute;
  size_t bytes;
};

const Precision kPrecisions[] = {
    {"fp16", CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, 2},
    {"int8", CUDNN_DATA_INT8, CUDNN_DATA_INT32, 1},
    {"u8s8", CUDNN_DATA_UINT8, CUDNN_DATA_INT32, 1},
    {"fp8", CUDNN_DATA_FP8_E4M3, CUDNN_DATA_FLOAT, 1},
};

struct Buffer {
  void* p = nullptr;
  explicit Buffer(size_t bytes) {
    check_cuda(cudaMalloc(&p, std::max<size_t>(bytes, 256)), "cudaMalloc");
    // Small values in every format: 0x10 bytes are 16 (int8), tiny fp16,
    // and 2^-11 in E4M3, none a NaN.
    check_cuda(cudaMemset(p, 0x10, std::max<size_t>(bytes, 256)), "cudaMemset");
  }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
};

struct Result {
  bool supported = false;
  double ms = 0;
  std::string engine, why;
  int plans = 0;
};

enum Uid : int64_t { X = 1, W, Y, S, B, R, A0, A1, A2, A3 };

Result run_layer(Context& gpu, const Layer& l, const Precision& p, int64_t n, size_t max_plans,
                 int reps) {
  Result res;
  const int64_t pad = l.r / 2, out = (l.hw + 2 * pad - l.r) / l.stride + 1;
  // Tensor-core 8-bit engines want channels in multiples of 16 (fp16: 8);
  // the stem's 3 are padded as a model's converter would.
  const int64_t c =
      p.bytes == 1 ? std::max<int64_t>(16, (l.c + 15) / 16 * 16) : std::max<int64_t>(8, l.c);
  const std::vector<int64_t> xd{n, c, l.hw, l.hw}, wd{l.k, c, l.r, l.r}, yd{n, l.k, out, out},
      vd{1, l.k, 1, 1};
  ErrorContext where;
  where.op = p.name;
  where.node = l.name;
  try {
    cg::OpGraph g(gpu.cudnn, where);
    const auto cl = cg::channels_last_strides;
    g.tensor({X, p.io, xd, cl(xd)});
    g.tensor({W, CUDNN_DATA_INT8 == p.io || p.io == CUDNN_DATA_UINT8 ? CUDNN_DATA_INT8 : p.io, wd,
              cl(wd)});
    // The output is the input's type; u8 activations come out of a ReLU as u8.
    g.tensor({Y, p.io, yd, cl(yd)});
    g.tensor({S, CUDNN_DATA_FLOAT, vd, cl(vd)});
    g.tensor({B, CUDNN_DATA_FLOAT, vd, cl(vd)});
    const cudnnDataType_t acc = p.compute == CUDNN_DATA_INT32 ? CUDNN_DATA_INT32 : CUDNN_DATA_FLOAT;
    g.tensor({A0, acc, yd, cl(yd), true});
    g.tensor({A1, CUDNN_DATA_FLOAT, yd, cl(yd), true});
    g.tensor({A2, CUDNN_DATA_FLOAT, yd, cl(yd), true});
    g.conv_forward(X, W, A0, {{pad, pad}, {pad, pad}, {l.stride, l.stride}, {1, 1}, p.compute});
    g.pointwise(CUDNN_POINTWISE_MUL, A0, S, A1);
    g.pointwise(CUDNN_POINTWISE_ADD, A1, B, A2);
    int64_t pre_act = A2;
    if (l.residual) {
      g.tensor({R, p.io, yd, cl(yd)});
      g.tensor({A3, CUDNN_DATA_FLOAT, yd, cl(yd), true});
      g.pointwise(CUDNN_POINTWISE_ADD, A2, R, A3);
      pre_act = A3;
    }
    g.pointwise(CUDNN_POINTWISE_RELU_FWD, pre_act, -1, Y);
    g.finalize();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<cg::Plan> plans = g.plans(max_plans);
    const double build_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.plans = int(plans.size());
    if (plans.empty()) {
      res.why = "no engine";
      return res;
    }
    Buffer x(size_t(n * c * l.hw * l.hw) * p.bytes), w(size_t(l.k * c * l.r * l.r) * p.bytes),
        y(size_t(n * l.k * out * out) * p.bytes), s(size_t(l.k) * 4), b(size_t(l.k) * 4),
        r(l.residual ? size_t(n * l.k * out * out) * p.bytes : 0);
    std::vector<int64_t> uids{X, W, Y, S, B};
    std::vector<void*> ptrs{x.p, w.p, y.p, s.p, b.p};
    if (l.residual) uids.push_back(R), ptrs.push_back(r.p);
    cudaEvent_t e0, e1;
    check_cuda(cudaEventCreate(&e0), "cudaEventCreate");
    check_cuda(cudaEventCreate(&e1), "cudaEventCreate");
    double best = 1e30;
    for (const cg::Plan& plan : plans) {
      Buffer ws(size_t(plan.workspace));
      try {
        for (int i = 0; i < 3; ++i) cg::execute(gpu.cudnn, plan, uids, ptrs, ws.p, where);
        check_cuda(cudaEventRecord(e0, gpu.stream), "cudaEventRecord");
        for (int i = 0; i < reps; ++i) cg::execute(gpu.cudnn, plan, uids, ptrs, ws.p, where);
        check_cuda(cudaEventRecord(e1, gpu.stream), "cudaEventRecord");
        check_cuda(cudaEventSynchronize(e1), "cudaEventSynchronize");
        float ms = 0;
        check_cuda(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
        if (ms / reps < best) best = ms / reps, res.engine = plan.engine;
      } catch (const Error& e) {
        res.why = e.what();
        cudaGetLastError();
      }
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    if (best < 1e30) res.supported = true, res.ms = best;
    if (build_s > 2) res.engine += " (plans built in " + std::to_string(int(build_s)) + " s)";
  } catch (const Error& e) {
    res.why = e.what();
  }
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 256;
  size_t plans = 3;
  int reps = 20;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch")) batch = std::stoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--plans")) plans = size_t(std::stoul(argv[i + 1]));
    if (!std::strcmp(argv[i], "--reps")) reps = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
  }
  if (device_count() == 0) {
    std::printf("qconv_gpu: no CUDA GPU\n");
    return 0;
  }
  Context& gpu = context(0);
  std::printf("qconv_gpu: %s, cuDNN %zu, batch %lld\n", gpu.name().c_str(), cudnnGetVersion(),
              (long long)batch);
  std::map<std::string, double> total;
  std::map<std::string, int> missing;
  std::string json =
      "{\"gpu\":\"" + gpu.name() + "\",\"batch\":" + std::to_string(batch) + ",\"layers\":[";
  for (const Layer& l : kResnet50) {
    std::printf("%-22s x%lld", l.name, (long long)l.count);
    json += std::string(&l != kResnet50 ? "," : "") + "{\"layer\":\"" + l.name +
            "\",\"count\":" + std::to_string(l.count);
    double fp16_ms = 0;
    for (const Precision& p : kPrecisions) {
      if (!only.empty() && only.find(p.name) == std::string::npos &&
          std::strcmp(p.name, "fp16") != 0)
        continue;
      const Result r = run_layer(gpu, l, p, batch, plans, reps);
      if (!std::strcmp(p.name, "fp16")) fp16_ms = r.ms;
      if (r.supported) {
        total[p.name] += r.ms * double(l.count);
        std::printf("  %s %.3f ms (%s)", p.name, r.ms, r.engine.c_str());
        if (fp16_ms > 0 && std::strcmp(p.name, "fp16") != 0) std::printf(" %.2fx", fp16_ms / r.ms);
      } else {
        // A layer an 8-bit engine cannot run stays in fp16 in a real model.
        total[p.name] += fp16_ms * double(l.count);
        ++missing[p.name];
        std::printf("  %s unsupported (%s)", p.name, r.why.c_str());
      }
      json +=
          ",\"" + std::string(p.name) + "_ms\":" + (r.supported ? std::to_string(r.ms) : "null");
    }
    std::printf("\n");
    json += "}";
  }
  json += "],\"total_ms\":{";
  bool first = true;
  for (const auto& [name, ms] : total) {
    std::printf(
        "all convolutions, %s: %.2f ms per batch (%.0f img/s of convolution alone), %.2fx fp16%s\n",
        name.c_str(), ms, double(batch) * 1000 / ms, total["fp16"] / ms,
        missing[name] ? (" (" + std::to_string(missing[name]) + " shapes in fp16)").c_str() : "");
    json += std::string(first ? "" : ",") + "\"" + name + "\":" + std::to_string(ms);
    first = false;
  }
  json += "}}";
  std::printf("%s\n", json.c_str());
  return 0;
}
