// TANDEM_CUDA_SYNC (cuda/context.h): how host threads wait for the GPU.
// Parsing only; the flag's effect is a timing question for the benchmarks.
#ifdef TANDEM_HAVE_CUDA
#include <gtest/gtest.h>

#include "core/error.h"
#include "cuda/context.h"

namespace {

TEST(CudaSyncFlag, NamesMapToCudasScheduleFlags) {
  using tandem::cuda::sync_flag_from;
  EXPECT_EQ(sync_flag_from(nullptr), 0u);
  EXPECT_EQ(sync_flag_from(""), 0u);
  EXPECT_EQ(sync_flag_from("auto"), 0u);
  EXPECT_EQ(sync_flag_from("spin"), unsigned(cudaDeviceScheduleSpin));
  EXPECT_EQ(sync_flag_from("yield"), unsigned(cudaDeviceScheduleYield));
  EXPECT_EQ(sync_flag_from("block"), unsigned(cudaDeviceScheduleBlockingSync));
  EXPECT_THROW(sync_flag_from("blocking"), tandem::Error);
  EXPECT_THROW(sync_flag_from("Block"), tandem::Error);
}

}  // namespace
#endif
