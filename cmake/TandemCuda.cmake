# TANDEM_CUDA=AUTO builds the CUDA backend when a toolkit is found (by default
# /usr/local/cuda); ON insists on it; OFF never looks.
set(TANDEM_HAVE_CUDA OFF)
if(NOT TANDEM_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(TANDEM_HAVE_CUDA ON)
    # sm_90 machine code (H100/H200) plus compute_90 PTX the driver can JIT
    # for newer chips; e.g. -DTANDEM_CUDA_ARCHS="80-real;90-real;90-virtual".
    set(TANDEM_CUDA_ARCHS "90-real;90-virtual" CACHE STRING "CUDA architectures to build for")
    set(CMAKE_CUDA_ARCHITECTURES ${TANDEM_CUDA_ARCHS})
    enable_language(CUDA)
    # nvcc 13 speaks C++20; CMake 3.25 does not know that yet.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    find_library(TANDEM_CUDNN cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} REQUIRED)
  elseif(TANDEM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TANDEM_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "tandem: CUDA backend ${TANDEM_HAVE_CUDA}")
