// profile::short_kernel_name on names as CUPTI hands them over (mangled by
// nvcc/g++); the expected strings are c++filt's output with the return type
// and argument list removed by hand.
#include <gtest/gtest.h>

#include "profile/kernel_name.h"

namespace tandem::profile {
namespace {

TEST(KernelName, AnonymousNamespaceIsPartOfTheName) {
  // nvcc's name for tandem::cuda::(anonymous namespace)::pad_kernel<unsigned int>.
  EXPECT_EQ(short_kernel_name("_ZN6tandem4cuda49_GLOBAL__N__b0af02e4_16_conv_epilogue_cu_7783b538L10pad_kernelIjEEvPKT_"
                              "PS3_NS0_11PadGeometryE"),
            "tandem::cuda::(anonymous namespace)::pad_kernel<unsigned int>");
}

TEST(KernelName, ReturnTypeAndArgumentsDropped) {
  EXPECT_EQ(short_kernel_name("_Z23implicit_convolve_sgemmI6__halfS0_Li128ELi6ELi7ELi3ELi3ELi5ELi1ELb0ELb1ELb1EEviiiPKT_"
                              "iPT0_S3_18kernel_conv_paramsyiffiS3_S3_bii"),
            "implicit_convolve_sgemm<__half, __half, 128, 6, 7, 3, 3, 5, 1, false, true, true>");
}

TEST(KernelName, PlainNamesKept) {
  EXPECT_EQ(short_kernel_name("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64"),
            "sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64");
  EXPECT_EQ(short_kernel_name(nullptr), "(unnamed kernel)");
  EXPECT_EQ(short_kernel_name(""), "(unnamed kernel)");
}

}  // namespace
}  // namespace tandem::profile
