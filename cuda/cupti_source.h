#pragma once
// The profiler's GPU activity source on NVIDIA GPUs: CUPTI's Activity API
// (concurrent kernels, memcpy, memset, runtime and driver API calls) into
// profile::GpuActivity. Installed by the CUDA backend when it is created;
// libcupti is loaded only when a profiling session starts, and its absence
// is a note in the summary ("GPU activity: CUPTI not available: ..."),
// never an error.
namespace tandem::cuda {

// Installs the CUPTI source as the process's GPU activity source (once).
void install_cupti_source();

// What every GPU user (inference backend, training table) calls when it first
// touches a GPU: --profile may then record its kernels (CUPTI loads only
// then) and sample the device memory tandem holds.
void enable_gpu_profiling();

}  // namespace tandem::cuda
