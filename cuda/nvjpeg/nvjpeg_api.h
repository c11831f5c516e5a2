#pragma once
// The part of NVIDIA's nvJPEG C API the GPU JPEG decoder uses, declared here
// and loaded at run time (dlopen), because libnvjpeg and nvjpeg.h exist only
// where the GPU is: tandem builds without them and simply reports "no GPU
// JPEG decoder" where the library is absent.
//
// The declarations match nvjpeg.h of nvJPEG 12.3 (CUDA 12.6; NVJPEG_VER_MAJOR
// 12, NVJPEG_VER_MINOR 3) and nvJPEG 11.6 (CUDA 11.6), which agree on every
// value and signature below; nvJPEG 13 (CUDA 13) keeps them (the library's
// ABI is what dlsym binds, by name). On Linux NVJPEGAPI is empty, so the
// functions use the default C calling convention. The enums are plain C-style
// enums with the header's exact values (same size and passing as C's).
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace tandem::cuda::nvjpeg {

// nvjpeg.h: #define NVJPEG_MAX_COMPONENT 4
constexpr int kMaxComponent = 4;

typedef enum {
  NVJPEG_STATUS_SUCCESS = 0,
  NVJPEG_STATUS_NOT_INITIALIZED = 1,
  NVJPEG_STATUS_INVALID_PARAMETER = 2,
  NVJPEG_STATUS_BAD_JPEG = 3,
  NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4,
  NVJPEG_STATUS_ALLOCATOR_FAILURE = 5,
  NVJPEG_STATUS_EXECUTION_FAILED = 6,
  NVJPEG_STATUS_ARCH_MISMATCH = 7,
  NVJPEG_STATUS_INTERNAL_ERROR = 8,
  NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9,
  NVJPEG_STATUS_INCOMPLETE_BITSTREAM = 10
} nvjpegStatus_t;

// Not passed to any call here; kept to document the header's values.
typedef enum {
  NVJPEG_CSS_444 = 0,
  NVJPEG_CSS_422 = 1,
  NVJPEG_CSS_420 = 2,
  NVJPEG_CSS_440 = 3,
  NVJPEG_CSS_411 = 4,
  NVJPEG_CSS_410 = 5,
  NVJPEG_CSS_GRAY = 6,
  NVJPEG_CSS_410V = 7,
  NVJPEG_CSS_UNKNOWN = -1
} nvjpegChromaSubsampling_t;

typedef enum {
  NVJPEG_OUTPUT_UNCHANGED = 0,
  NVJPEG_OUTPUT_YUV = 1,
  NVJPEG_OUTPUT_Y = 2,
  NVJPEG_OUTPUT_RGB = 3,   // planar RGB
  NVJPEG_OUTPUT_BGR = 4,
  NVJPEG_OUTPUT_RGBI = 5,  // interleaved RGB, written to channel[0]
  NVJPEG_OUTPUT_BGRI = 6
} nvjpegOutputFormat_t;

typedef enum {
  NVJPEG_BACKEND_DEFAULT = 0,
  NVJPEG_BACKEND_HYBRID = 1,
  NVJPEG_BACKEND_GPU_HYBRID = 2,
  NVJPEG_BACKEND_HARDWARE = 3,  // the GPU's JPEG engines: baseline, single scan
  NVJPEG_BACKEND_GPU_HYBRID_DEVICE = 4,
  NVJPEG_BACKEND_HARDWARE_DEVICE = 5
} nvjpegBackend_t;

// The SOF marker of a parsed stream.
typedef enum {
  NVJPEG_ENCODING_UNKNOWN = 0x0,
  NVJPEG_ENCODING_BASELINE_DCT = 0xc0,
  NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN = 0xc1,
  NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN = 0xc2
} nvjpegJpegEncoding_t;

// nvjpegCreateEx flags (nvjpeg.h 12.x #defines). UPSAMPLING_WITH_INTERPOLATION
// (nvJPEG >= 12.1) upsamples chroma with libjpeg's triangle ("fancy")
// filter instead of replicating samples, as NVIDIA's nvImageCodec enables
// by default to match libjpeg.
constexpr unsigned kFlagsDefault = 0;
constexpr unsigned kFlagsUpsamplingWithInterpolation = 1u << 5;

// Output descriptor: device pointers and row pitches in bytes.
typedef struct {
  unsigned char* channel[kMaxComponent];
  size_t pitch[kMaxComponent];
} nvjpegImage_t;

// Opaque handles.
struct nvjpegHandle;
typedef struct nvjpegHandle* nvjpegHandle_t;
struct nvjpegJpegState;
typedef struct nvjpegJpegState* nvjpegJpegState_t;
struct nvjpegJpegStream;
typedef struct nvjpegJpegStream* nvjpegJpegStream_t;
// The allocator structs are only ever passed as null (cudaMalloc and
// cudaHostAlloc are used), so they stay incomplete.
struct nvjpegDevAllocator_t;
struct nvjpegPinnedAllocator_t;

extern "C" {
typedef nvjpegStatus_t (*nvjpegCreateEx_fn)(nvjpegBackend_t backend, nvjpegDevAllocator_t* dev_allocator,
                                            nvjpegPinnedAllocator_t* pinned_allocator, unsigned int flags,
                                            nvjpegHandle_t* handle);
typedef nvjpegStatus_t (*nvjpegDestroy_fn)(nvjpegHandle_t handle);
typedef nvjpegStatus_t (*nvjpegJpegStateCreate_fn)(nvjpegHandle_t handle, nvjpegJpegState_t* jpeg_handle);
typedef nvjpegStatus_t (*nvjpegJpegStateDestroy_fn)(nvjpegJpegState_t jpeg_handle);
typedef nvjpegStatus_t (*nvjpegDecodeBatchedInitialize_fn)(nvjpegHandle_t handle, nvjpegJpegState_t jpeg_handle,
                                                           int batch_size, int max_cpu_threads,
                                                           nvjpegOutputFormat_t output_format);
typedef nvjpegStatus_t (*nvjpegDecodeBatched_fn)(nvjpegHandle_t handle, nvjpegJpegState_t jpeg_handle,
                                                 const unsigned char* const* data, const size_t* lengths,
                                                 nvjpegImage_t* destinations, cudaStream_t stream);
typedef nvjpegStatus_t (*nvjpegJpegStreamCreate_fn)(nvjpegHandle_t handle, nvjpegJpegStream_t* jpeg_stream);
typedef nvjpegStatus_t (*nvjpegJpegStreamDestroy_fn)(nvjpegJpegStream_t jpeg_stream);
typedef nvjpegStatus_t (*nvjpegJpegStreamParseHeader_fn)(nvjpegHandle_t handle, const unsigned char* data,
                                                         size_t length, nvjpegJpegStream_t jpeg_stream);
typedef nvjpegStatus_t (*nvjpegJpegStreamGetJpegEncoding_fn)(nvjpegJpegStream_t jpeg_stream,
                                                             nvjpegJpegEncoding_t* jpeg_encoding);
typedef nvjpegStatus_t (*nvjpegJpegStreamGetFrameDimensions_fn)(nvjpegJpegStream_t jpeg_stream,
                                                                unsigned int* width, unsigned int* height);
typedef nvjpegStatus_t (*nvjpegJpegStreamGetComponentsNum_fn)(nvjpegJpegStream_t jpeg_stream,
                                                              unsigned int* components_num);
// is_supported is set to 0 when the batched (hardware) decoder can take the
// stream, non-zero otherwise.
typedef nvjpegStatus_t (*nvjpegDecodeBatchedSupported_fn)(nvjpegHandle_t handle, nvjpegJpegStream_t jpeg_stream,
                                                          int* is_supported);
}

// The loaded entry points; every one is non-null in a loaded table.
struct NvjpegApi {
  nvjpegCreateEx_fn CreateEx = nullptr;
  nvjpegDestroy_fn Destroy = nullptr;
  nvjpegJpegStateCreate_fn JpegStateCreate = nullptr;
  nvjpegJpegStateDestroy_fn JpegStateDestroy = nullptr;
  nvjpegDecodeBatchedInitialize_fn DecodeBatchedInitialize = nullptr;
  nvjpegDecodeBatched_fn DecodeBatched = nullptr;
  nvjpegJpegStreamCreate_fn JpegStreamCreate = nullptr;
  nvjpegJpegStreamDestroy_fn JpegStreamDestroy = nullptr;
  nvjpegJpegStreamParseHeader_fn JpegStreamParseHeader = nullptr;
  nvjpegJpegStreamGetJpegEncoding_fn JpegStreamGetJpegEncoding = nullptr;
  nvjpegJpegStreamGetFrameDimensions_fn JpegStreamGetFrameDimensions = nullptr;
  nvjpegJpegStreamGetComponentsNum_fn JpegStreamGetComponentsNum = nullptr;
  nvjpegDecodeBatchedSupported_fn DecodeBatchedSupported = nullptr;
};

// The library names tried, in order.
inline constexpr const char* kLibraryNames[] = {"libnvjpeg.so.13", "libnvjpeg.so"};

// Loads libnvjpeg and its entry points once per process (thread-safe; the
// library stays loaded). Null when the library or a symbol is missing, with
// the dlopen/dlsym message, naming the library, in *why_not (if given).
const NvjpegApi* load_nvjpeg(std::string* why_not = nullptr);

// "NVJPEG_STATUS_BAD_JPEG", ...; "nvJPEG status <n>" for values not listed.
std::string status_name(nvjpegStatus_t s);

// Throws tandem::Error "<call>: <status name>" unless s is SUCCESS
// (cuda::OutOfMemory for an allocator failure).
void check_nvjpeg(nvjpegStatus_t s, const char* call);

}  // namespace tandem::cuda::nvjpeg
