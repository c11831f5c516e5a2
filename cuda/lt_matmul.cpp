#include "cuda/lt_matmul.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "cuda/float_types.h"

namespace tandem::cuda {

namespace {

// Buffers come from the executor's arena, aligned to 64 bytes; constants and
// graph inputs to 256. Promising no more than 16 keeps every view safe.
constexpr uint32_t kAlignment = 16;

cudaDataType_t lt_type(DType t) {
  if (t == DType::f16) return CUDA_R_16F;
  if (t == DType::bf16) return CUDA_R_16BF;
  return CUDA_R_32F;
}

template <typename V>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, V v, const ErrorContext& w) {
  check_cublas(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(v)), "cublasLtMatmulDescSetAttribute", w);
}

cublasLtMatrixLayout_t make_layout(DType t, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                                   const ErrorContext& w) {
  cublasLtMatrixLayout_t l = nullptr;
  check_cublas(cublasLtMatrixLayoutCreate(&l, lt_type(t), uint64_t(rows), uint64_t(cols), ld),
               "cublasLtMatrixLayoutCreate", w);
  if (batch > 1) {
    int32_t count = int32_t(batch);
    cublasStatus_t s = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
    if (s == CUBLAS_STATUS_SUCCESS)
      s = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride));
    if (s != CUBLAS_STATUS_SUCCESS) {
      cublasLtMatrixLayoutDestroy(l);
      check_cublas(s, "cublasLtMatrixLayoutSetAttribute(batch)", w);
    }
  }
  return l;
}

}  // namespace

LtKernels lt_kernels_from(const char* value) {
  const std::string v = value ? value : "";
  if (v.empty() || v == "any") return LtKernels::any;
  if (v == "plain") return LtKernels::plain;
  throw Error("TANDEM_CUBLASLT_KERNELS=" + v + ": expected 'any' or 'plain'");
}

namespace {

uint16_t config_of(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t a) {
  uint16_t v = 0;
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, a, &v, sizeof(v), &written) !=
      CUBLAS_STATUS_SUCCESS)
    return 0;
  return v;
}

bool unclustered(const cublasLtMatmulAlgo_t& algo) {
  const uint16_t c = config_of(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  return c == CUBLASLT_CLUSTER_SHAPE_AUTO || c == CUBLASLT_CLUSTER_SHAPE_1x1x1;
}

// A warp-level MMA kernel (its inner shape one of mma.sync's) or one on the
// CUDA cores (no tensor-op bit among its numerical implementation flags).
bool plain(const cublasLtMatmulAlgo_t& algo) {
  const uint16_t inner = config_of(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID);
  if (inner >= CUBLASLT_MATMUL_INNER_SHAPE_MMA884 && inner <= CUBLASLT_MATMUL_INNER_SHAPE_MMA16816)
    return unclustered(algo);
  uint64_t flags = 0;
  size_t written = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS, &flags,
                                        sizeof(flags), &written) != CUBLAS_STATUS_SUCCESS)
    return false;
  return (flags & CUBLASLT_NUMERICAL_IMPL_FLAGS_OP_TYPE_MASK) ==
             CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA &&
         unclustered(algo);
}

// The heuristic's first result that `accept` takes; null when none.
template <typename Accept>
const cublasLtMatmulHeuristicResult_t* first(const cublasLtMatmulHeuristicResult_t* r, int found,
                                             Accept accept) {
  for (int i = 0; i < found; ++i)
    if (r[i].state == CUBLAS_STATUS_SUCCESS && accept(r[i].algo)) return &r[i];
  return nullptr;
}

template <typename V>
bool set_config(cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t a, V v) {
  return cublasLtMatmulAlgoConfigSetAttribute(&algo, a, &v, sizeof(v)) == CUBLAS_STATUS_SUCCESS;
}

// The values of an array capability (tile or stage ids), or {0}
// (undefined) when it has none.
std::vector<uint32_t> cap_ids(const cublasLtMatmulAlgo_t& algo,
                              cublasLtMatmulAlgoCapAttributes_t a) {
  size_t bytes = 0;
  std::vector<uint32_t> ids;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, a, nullptr, 0, &bytes) == CUBLAS_STATUS_SUCCESS &&
      bytes >= 4) {
    ids.resize(bytes / 4);
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, a, ids.data(), bytes, &bytes) !=
        CUBLAS_STATUS_SUCCESS)
      ids.clear();
  }
  if (ids.empty()) ids.push_back(0);
  return ids;
}

}  // namespace

std::optional<cublasLtMatmulHeuristicResult_t> LtMatmul::search_plain(cudaDataType_t type,
                                                                      size_t max_workspace) {
  constexpr int kIds = 256;
  int ids[kIds];
  int n = 0;
  if (cublasLtMatmulAlgoGetIds(ctx_.lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, type, type, type, type,
                               kIds, ids, &n) != CUBLAS_STATUS_SUCCESS)
    return std::nullopt;
  for (const bool mma : {true, false})
    for (int i = 0; i < n; ++i) {
      cublasLtMatmulAlgo_t algo;
      if (cublasLtMatmulAlgoInit(ctx_.lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, type, type, type, type,
                                 ids[i], &algo) != CUBLAS_STATUS_SUCCESS)
        continue;
      // mma.sync's shape asked for outright; else the algorithm as it is
      // (a CUDA-core one passes plain()).
      if (mma && !(set_config(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID,
                              uint16_t(CUBLASLT_MATMUL_INNER_SHAPE_MMA16816)) &&
                   set_config(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                              uint16_t(CUBLASLT_CLUSTER_SHAPE_1x1x1))))
        continue;
      for (uint32_t tile : cap_ids(algo, CUBLASLT_ALGO_CAP_TILE_IDS))
        for (uint32_t stages : cap_ids(algo, CUBLASLT_ALGO_CAP_STAGES_IDS)) {
          if (!set_config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, tile) ||
              !set_config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, stages) || !plain(algo))
            continue;
          cublasLtMatmulHeuristicResult_t r{};
          if (cublasLtMatmulAlgoCheck(ctx_.lt, desc_, lt_a_, lt_b_, lt_d_, lt_d_, &algo, &r) ==
                  CUBLAS_STATUS_SUCCESS &&
              r.state == CUBLAS_STATUS_SUCCESS && r.workspaceSize <= max_workspace) {
            r.algo = algo;
            return r;
          }
        }
    }
  return std::nullopt;
}

LtMatmul::LtMatmul(Context& c, const LtMatmulSpec& s, ErrorContext where) : ctx_(c), s_(s), where_(std::move(where)) {
  check_supported(s.dtype == DType::f32 || is_16bit_float(s.dtype),
                  "cuBLASLt matmul takes f32, f16 or bf16, not " + std::string(dtype_name(s.dtype)), where_);
  check_supported(s.m > 0 && s.n > 0 && s.k > 0 && s.batch > 0 && s.batch <= INT32_MAX,
                  "cuBLASLt matmul with an empty or huge extent", where_);
  // From here on the destructor must release what was made, so a throw
  // below leaves nothing behind.
  try {
    check_cublas(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate", where_);
    // cuBLASLt's A is our B (m = N rows of D^T), its B our A.
    set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSA, int32_t(s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N), where_);
    set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSB, int32_t(s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N), where_);
    cublasLtEpilogue_t epi = s.bias ? (s.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                    : (s.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
    set_desc(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, epi, where_);
    if (s.bias) set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, s.bias, where_);

    // Row-major B [K,N] is column-major [N,K] (ld N); stored [N,K] it is
    // column-major [K,N] (ld K), transposed by the op. Likewise A.
    auto ld = [](int64_t given, int64_t packed) { return given ? given : packed; };
    lt_a_ = s.trans_b ? make_layout(s.dtype, s.k, s.n, ld(s.ld_b, s.k), s.batch, s.stride_b, where_)
                      : make_layout(s.dtype, s.n, s.k, ld(s.ld_b, s.n), s.batch, s.stride_b, where_);
    lt_b_ = s.trans_a ? make_layout(s.dtype, s.m, s.k, ld(s.ld_a, s.m), s.batch, s.stride_a, where_)
                      : make_layout(s.dtype, s.k, s.m, ld(s.ld_a, s.k), s.batch, s.stride_a, where_);
    lt_d_ = make_layout(s.dtype, s.n, s.m, ld(s.ld_d, s.n), s.batch, s.stride_d, where_);

    // Read before the preference exists: a bad value throws, leaking nothing.
    const LtKernels kernels = lt_kernels_from(std::getenv("TANDEM_CUBLASLT_KERNELS"));
    cublasLtMatmulPreference_t pref = nullptr;
    check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", where_);
    uint64_t ws = c.lt_workspace_bytes;
    cublasStatus_t st =
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    for (auto a : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                   CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceSetAttribute(pref, a, &kAlignment, sizeof(kAlignment));
    constexpr int kCandidates = 32;
    cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulAlgoGetHeuristic(c.lt, desc_, lt_a_, lt_b_, lt_d_, lt_d_, pref,
                                          kernels == LtKernels::any ? 1 : kCandidates, results,
                                          &found);
    cublasLtMatmulPreferenceDestroy(pref);
    check_cublas(st, "cublasLtMatmulAlgoGetHeuristic", where_);
    const cublasLtMatmulHeuristicResult_t* result =
        kernels == LtKernels::any
            ? first(results, found, [](const cublasLtMatmulAlgo_t&) { return true; })
            : first(results, found, plain);
    // Plain kernels the heuristic does not offer (on Hopper it may offer
    // cluster kernels alone): the library's own, else an unclustered one.
    std::optional<cublasLtMatmulHeuristicResult_t> searched;
    if (!result && kernels == LtKernels::plain) {
      searched = search_plain(lt_type(s.dtype), c.lt_workspace_bytes);
      result = searched ? &*searched : first(results, found, unclustered);
    }
    check_supported(result != nullptr,
                    "cuBLASLt has no " + std::string(kernels == LtKernels::plain ? "plain " : "") +
                        "algorithm for this matmul (M=" + std::to_string(s.m) +
                        " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k) + ")",
                    where_);
    algo_ = result->algo;
    workspace_ = result->workspaceSize;
  } catch (...) {
    release();
    throw;
  }
}

LtMatmul::~LtMatmul() { release(); }

void LtMatmul::release() {
  if (lt_d_) cublasLtMatrixLayoutDestroy(lt_d_);
  if (lt_b_) cublasLtMatrixLayoutDestroy(lt_b_);
  if (lt_a_) cublasLtMatrixLayoutDestroy(lt_a_);
  if (desc_) cublasLtMatmulDescDestroy(desc_);
  lt_a_ = lt_b_ = lt_d_ = nullptr;
  desc_ = nullptr;
}

void LtMatmul::run(const void* a, const void* b, const void* c, void* d) {
  float beta = s_.with_c ? s_.beta : 0.f;
  const void* cp = s_.with_c ? c : d;  // not read when beta is 0
  check_cublas(cublasLtMatmul(ctx_.lt, desc_, &s_.alpha, b, lt_a_, a, lt_b_, &beta, cp, lt_d_, d, lt_d_, &algo_,
                              ctx_.lt_workspace, workspace_, ctx_.stream),
               "cublasLtMatmul", where_);
}

}  // namespace tandem::cuda
