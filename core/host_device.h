#pragma once
// TANDEM_HOST_DEVICE marks a small function that both the host compiler and
// nvcc compile (a per-element rule shared by a CPU loop and a CUDA kernel, so
// both devices compute the same thing). Headers using it stay free of CUDA
// types.
#if defined(__CUDACC__)
#define TANDEM_HOST_DEVICE __host__ __device__
#else
#define TANDEM_HOST_DEVICE
#endif
