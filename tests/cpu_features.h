#pragma once
// Tests of what only some CPUs' oneDNN builds have skip, saying why, where
// it is missing (aarch64 builds without Arm Compute Library, x86 before
// AVX-512); everywhere else they run and can fail.
#include <gtest/gtest.h>

#include "cpu/cpu_backend.h"

#define TANDEM_SKIP_WITHOUT_CPU_BF16()                                                         \
  do {                                                                                         \
    if (!::tandem::cpu::has_bf16())                                                            \
      GTEST_SKIP() << "oneDNN has no bf16 kernels on this CPU: " << ::tandem::cpu::instruction_set(); \
  } while (0)
