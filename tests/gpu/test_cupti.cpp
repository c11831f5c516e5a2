// CUPTI GPU activity (cuda/cupti_source.h) on a real GPU: a profiled run of
// copies and kernels from cuda/ must come back as kernel and memcpy records
// inside the session, each joined to its launch, and the kernels' CUPTI
// durations must add up to what CUDA events measure for the same launches
// (bench/profile_vs_ncu.py, in miniature).
#include <cuda_runtime.h>

#include <string>
#include <unordered_set>

#include "cuda/conv_epilogue.h"
#include "cuda/cupti_api.h"
#include "cuda/cupti_source.h"
#include "gpu_test_util.h"
#include "profile/session.h"

namespace tandem::testing {
namespace {

#define ASSERT_CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// Device and pinned host memory freed on scope exit, errors or not.
struct Buffers {
  void* host = nullptr;
  void* x = nullptr;
  void* y = nullptr;
  ~Buffers() {
    cudaFreeHost(host);
    cudaFree(x);
    cudaFree(y);
  }
};

TEST(Cupti, KernelAndCopyRecordsMatchTheirLaunchesAndCudaEvents) {
  TANDEM_REQUIRE_GPU();
  std::string why;
  if (cuda::load_cupti(&why) == nullptr) GTEST_SKIP() << "CUPTI cannot load: " << why;
  cuda::Context& ctx = cuda::context(0);
  cuda::install_cupti_source();

  // ~256 MiB in, a little more out: ~0.2 ms per launch on an H200, long next
  // to the few µs between an event and its kernel.
  cuda::PadGeometry g;
  g.n = 16, g.h = 512, g.w = 512, g.c = 16, g.top = g.bottom = g.left = g.right = 1;
  const size_t in_bytes = size_t(g.n * g.h * g.w * g.c) * 4, out_bytes = size_t(g.out_elements()) * 4;
  Buffers b;
  ASSERT_CUDA_OK(cudaMallocHost(&b.host, in_bytes));
  ASSERT_CUDA_OK(cudaMalloc(&b.x, in_bytes));
  ASSERT_CUDA_OK(cudaMalloc(&b.y, out_bytes));
  // Loads the module before profiling.
  cuda::launch_pad_nhwc(4, b.x, b.y, g, ctx.props, ctx.stream, {});
  ASSERT_CUDA_OK(cudaStreamSynchronize(ctx.stream));

  constexpr int kLaunches = 20;
  cudaEvent_t events[kLaunches + 1];
  for (cudaEvent_t& e : events) ASSERT_CUDA_OK(cudaEventCreate(&e));
  profile::Trace trace;
  {
    profile::TraceSession session(profile::SessionOutputs{::testing::TempDir() + "/cupti_trace.json", ""});
    ASSERT_CUDA_OK(cudaMemcpyAsync(b.x, b.host, in_bytes, cudaMemcpyHostToDevice, ctx.stream));
    ASSERT_CUDA_OK(cudaEventRecord(events[0], ctx.stream));
    for (int i = 0; i < kLaunches; ++i) {
      cuda::launch_pad_nhwc(4, b.x, b.y, g, ctx.props, ctx.stream, {});
      ASSERT_CUDA_OK(cudaEventRecord(events[i + 1], ctx.stream));
    }
    ASSERT_CUDA_OK(cudaMemcpyAsync(b.host, b.y, in_bytes, cudaMemcpyDeviceToHost, ctx.stream));
    ASSERT_CUDA_OK(cudaStreamSynchronize(ctx.stream));
    trace = session.finish();
  }
  double event_ms = 0;
  for (int i = 0; i < kLaunches; ++i) {
    float ms = 0;
    ASSERT_CUDA_OK(cudaEventElapsedTime(&ms, events[i], events[i + 1]));
    event_ms += ms;
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);

  const profile::GpuActivity& gpu = trace.gpu;
  ASSERT_TRUE(gpu.collected) << gpu.unavailable;
  EXPECT_EQ(gpu.dropped, 0u);
  std::unordered_set<uint32_t> launched;
  for (const profile::GpuApiCall& c : gpu.api_calls) {
    EXPECT_NE(c.tid, 0u);
    launched.insert(c.correlation);
  }
  int kernels = 0, htod = 0, dtoh = 0;
  uint64_t kernel_ns = 0;
  for (const profile::GpuStream& s : gpu.streams)
    for (const profile::GpuOp& op : s.ops) {
      EXPECT_GE(op.start_ns, trace.begin_ns);
      EXPECT_LE(op.end_ns, trace.end_ns);
      EXPECT_LT(op.start_ns, op.end_ns);
      EXPECT_TRUE(launched.count(op.correlation)) << gpu.names[op.name] << " has no launch";
      if (op.kind == profile::GpuOpKind::kernel && gpu.names[op.name].find("pad_kernel") != std::string::npos) {
        kernels++;
        kernel_ns += op.end_ns - op.start_ns;
      }
      if (op.kind == profile::GpuOpKind::memcpy && op.bytes == in_bytes) {
        htod += op.copy == profile::CopyKind::htod;
        dtoh += op.copy == profile::CopyKind::dtoh;
      }
    }
  EXPECT_EQ(kernels, kLaunches);
  EXPECT_EQ(htod, 1);
  EXPECT_EQ(dtoh, 1);
  const double cupti_ms = double(kernel_ns) / 1e6;
  EXPECT_NEAR(cupti_ms, event_ms, 0.05 * event_ms) << "CUPTI kernel total vs CUDA events";
}

}  // namespace
}  // namespace tandem::testing
