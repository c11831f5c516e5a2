#pragma once
// The interface every compute backend implements (cpu/, cuda/). Kept small on
// purpose, in the spirit of ggml's backend vtable: the graph layer only ever
// asks a backend whether it supports an op, to prepare a kernel for fixed
// shapes, and for memory.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/attributes.h"
#include "core/device.h"
#include "core/tensor.h"

namespace tandem {

// One node as a backend sees it, with every shape already inferred. The
// pointers in it (attrs, constants) are valid only during prepare(): a kernel
// copies what it keeps.
struct OpDesc {
  std::string op_type;  // ONNX op type, or "tandem.*" for fused / internal ops
  std::string node;     // node name, for errors
  const Attributes* attrs = nullptr;
  int opset = 17;
  // Float32 matrix work (conv, gemm) may use TF32 tensor cores (10-bit
  // mantissa products); off by default, so float32 stays float32.
  bool allow_tf32 = false;
  // Inputs as they will arrive (dtype, shape, layout). An omitted optional
  // input has present[i] == false.
  std::vector<TensorDesc> inputs;
  std::vector<bool> present;
  // Host value of input i when it is a constant (weights, shape tensors),
  // else nullptr. Kernels may pre-process constants (reorder weights) once.
  std::vector<const Tensor*> constants;
  // reusable[i]: the executor can let output 0 overwrite input i's buffer
  // (this node is the input's last reader). Empty means none is.
  std::vector<bool> reusable;
  // Output dtypes and shapes from ops/ shape inference; layouts are chosen by
  // the backend in KernelPlan.
  std::vector<TensorDesc> outputs;

  ErrorContext context() const { return {"", node, op_type, ""}; }
  bool has_input(size_t i) const { return i < inputs.size() && present[i]; }
  bool is_reusable(size_t i) const { return i < reusable.size() && reusable[i]; }
  const Attributes& attributes() const;
};

// Scratch memory the executor lends a kernel for the duration of one run.
struct RunContext {
  void* scratch = nullptr;
  size_t scratch_bytes = 0;
};

// A prepared op for fixed shapes and layouts. `in`/`out` are device pointers to
// buffers laid out as declared in KernelPlan.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(const void* const* in, void* const* out, const RunContext& ctx) = 0;
  // Scratch bytes `run` needs (oneDNN scratchpad, im2col, ...).
  virtual size_t scratch_bytes() const { return 0; }
};

struct KernelPlan {
  std::unique_ptr<Kernel> kernel;
  // Layout the kernel needs for each input; the executor inserts a reorder
  // where the producer's layout differs.
  std::vector<Layout> input_layouts;
  // Layout of each output.
  std::vector<Layout> output_layouts;
  // When >= 0, output 0 is a view of this input's buffer and `kernel` may be
  // null (Reshape, Flatten, Identity, Dropout at inference).
  int alias_input = -1;
  // When >= 0 (and the input was marked reusable), output 0 is computed in
  // place in this input's buffer, which holds the input on entry (a residual
  // accumulated with oneDNN's sum post-op). The kernel does not read the
  // input through its own pointer.
  int inplace_input = -1;
  // keeps_constant[i]: input i is a constant the kernel converted and keeps
  // its own copy of at prepare (weights in its layout and precision); run()
  // never reads it, so the executor need not hold it on the device too.
  std::vector<bool> keeps_constant;
};

// Device work recorded once and replayed with one launch (a CUDA graph): the
// same kernels on the same buffers, without per-kernel launch cost.
class Recording {
 public:
  virtual ~Recording() = default;
  virtual void replay() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual Device device() const = 0;
  virtual bool supports(const OpDesc& op) const = 0;
  // Builds a kernel; throws Error (with node context) when it cannot.
  virtual KernelPlan prepare(const OpDesc& op) = 0;

  // Raw device memory for the executor's arena.
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr) = 0;
  virtual void copy_from_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
  // Host memory the device copies from fastest (page-locked on a GPU, so a
  // pipeline's batch goes to the device without a staging copy); plain
  // 64-byte-aligned memory on the CPU. Throws Error when none is left.
  virtual void* allocate_host(size_t bytes);
  virtual void deallocate_host(void* ptr);
  // Waits for all work submitted to this backend.
  virtual void synchronize() {}
  // Hands memory kept for reuse (freed blocks of a pool) back to the system:
  // called after an out-of-memory error, before a retry with a smaller batch.
  // Never throws.
  virtual void release_cached_memory() {}
  // Records the work `body` submits instead of running it; nullptr when the
  // backend cannot record (the CPU). Kernels' run() must then only enqueue
  // device work: no host synchronization, no allocation.
  virtual std::unique_ptr<Recording> record(const std::function<void()>& body) { return nullptr; }
};

// Host memory from Backend::allocate_host, freed with its backend.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(Backend& b, size_t bytes) : backend_(&b), bytes_(bytes), p_(b.allocate_host(bytes)) {}
  HostBuffer(HostBuffer&& o) noexcept
      : backend_(std::exchange(o.backend_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), p_(std::exchange(o.p_, nullptr)) {}
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    std::swap(backend_, o.backend_), std::swap(bytes_, o.bytes_), std::swap(p_, o.p_);
    return *this;
  }
  ~HostBuffer() {
    if (p_) backend_->deallocate_host(p_);
  }
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  Backend* backend_ = nullptr;
  size_t bytes_ = 0;
  void* p_ = nullptr;
};

// Layout conversion is an op like any other, so every backend can do it.
inline constexpr const char* kReorderOp = "tandem.Reorder";

}  // namespace tandem
