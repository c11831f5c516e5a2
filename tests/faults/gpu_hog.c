// Takes a GPU's memory from another process, as a second user's job does:
// allocates until at most LEAVE_MIB MiB stay free, prints "held N MiB, F MiB
// free" and holds it until stdin closes. The fault tests start tandem beside
// it to see what tandem does when a model does not fit.
//   gpu_hog LEAVE_MIB [DEVICE]
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: gpu_hog LEAVE_MIB [DEVICE]\n");
    return 2;
  }
  size_t leave = (size_t)strtoull(argv[1], NULL, 10) << 20;
  int device = argc > 2 ? atoi(argv[2]) : 0;
  cudaError_t e = cudaSetDevice(device);
  size_t free_bytes = 0, total = 0;
  if (e == cudaSuccess) e = cudaMemGetInfo(&free_bytes, &total);
  if (e != cudaSuccess) {
    fprintf(stderr, "gpu_hog: %s\n", cudaGetErrorString(e));
    return 1;
  }
  // Large blocks first, then smaller ones, so the little that is left is
  // what LEAVE_MIB asked for and not a fragment too small for a big block.
  size_t held = 0;
  for (size_t block = (size_t)1 << 30; block >= ((size_t)1 << 20); block >>= 1) {
    for (;;) {
      if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess || free_bytes < leave + block) break;
      void* p = NULL;
      if (cudaMalloc(&p, block) != cudaSuccess) {
        cudaGetLastError();
        break;
      }
      held += block;
    }
  }
  cudaMemGetInfo(&free_bytes, &total);
  printf("held %zu MiB, %zu MiB free\n", held >> 20, free_bytes >> 20);
  fflush(stdout);
  while (getchar() != EOF) {
  }
  return 0;
}
