// The Communicator over MPI (OpenMPI from Debian): host buffers go to MPI
// as they are; a GPU tensor is staged through the host, which is correct
// on any MPI and slow, until the NCCL communicator takes GPU ranks.
#include "train/distributed/communicator.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "train/device_tensor.h"

#if TANDEM_HAVE_MPI
#include <mpi.h>
#endif

namespace tandem::train {

#if TANDEM_HAVE_MPI

namespace {

// MPI's own words for a return code, with the call that got it.
void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string(call) + ": " + std::string(text, size_t(len)));
}

class MpiPending : public PendingCollective {
 public:
  MpiPending(Tensor target, Tensor staged) : target_(std::move(target)), staged_(std::move(staged)) {}
  ~MpiPending() override {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  MPI_Request* request() { return &request_; }
  float* buffer() { return (staged_.defined() ? staged_ : target_).data<float>(); }
  void wait() override {
    check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait (gradient sum)");
    if (staged_.defined()) copy_tensor(target_, staged_);
  }

 private:
  Tensor target_, staged_;  // staged_: the host copy of a device target
  MPI_Request request_ = MPI_REQUEST_NULL;
};

class MpiWorld : public Communicator {
 public:
  MpiWorld() {
    int initialized = 0;
    check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
    check(!initialized, "MPI is initialized already: one MPI world per process");
    int provided = 0;
    // Only the training thread calls MPI (the loader's workers do not).
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // Errors come back as return codes, which become Errors naming the call.
    check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    MPI_Comm local;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
              "MPI_Comm_split_type");
    check_mpi(MPI_Comm_rank(local, &local_rank_), "MPI_Comm_rank (machine)");
    MPI_Comm_free(&local);
  }
  ~MpiWorld() override { MPI_Finalize(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  std::unique_ptr<PendingCollective> sum_async(Tensor t) override {
    check(t.dtype() == DType::f32, "the gradient sum takes f32 tensors, got " + t.desc().str());
    check(t.numel() <= int64_t(INT32_MAX), "a gradient bucket over 2^31 values");
    Tensor staged = t.device().is_cpu() ? Tensor() : to_host(t);
    auto p = std::make_unique<MpiPending>(t, staged);
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, p->buffer(), int(t.numel()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                             p->request()),
              "MPI_Iallreduce (gradient sum)");
    return p;
  }

  void sum(std::span<double> values) override {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), int(values.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce (step metrics)");
  }

  void broadcast(Tensor t, int root) override {
    Tensor host = t.device().is_cpu() ? t : to_host(t);
    check(int64_t(host.bytes()) <= int64_t(INT32_MAX), "a broadcast over 2 GiB");
    check_mpi(MPI_Bcast(host.raw(), int(host.bytes()), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
    if (!t.device().is_cpu()) copy_tensor(t, host);
  }

  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort does not return; should it, nothing may run on
  }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0;
};

}  // namespace

bool built_with_mpi() { return true; }

std::unique_ptr<Communicator> mpi_world() { return std::make_unique<MpiWorld>(); }

#else

bool built_with_mpi() { return false; }

std::unique_ptr<Communicator> mpi_world() {
  throw Error::unsupported("this tandem was built without MPI: install libopenmpi-dev (scripts/setup does) and rebuild");
}

#endif

}  // namespace tandem::train
