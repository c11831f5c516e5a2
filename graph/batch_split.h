#pragma once
// Running one batch as several smaller ones along dim 0: what a session does
// when a batch does not fit in device memory (graph/session.cpp).
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace tandem {

// The batch the inputs share: every input is a plain tensor whose dim 0 the
// model declares dynamic (`declared` extent -1), all with the same dim 0.
// 0 when they are not like that (the run then cannot be split).
int64_t shared_batch(const std::vector<Tensor>& inputs, const std::vector<TensorDesc>& declared);

// Rows [begin, begin + count) of each input, as views (no copy; host or
// device memory alike).
std::vector<Tensor> batch_rows(const std::vector<Tensor>& inputs, int64_t begin, int64_t count);

// Whether output lists of runs on `counts[i]` rows each can be joined: the
// same number of outputs, each plain with dim 0 equal to its run's rows and
// the same dtype and other extents in every run.
bool joinable(const std::vector<std::vector<Tensor>>& parts, const std::vector<int64_t>& counts);

// Each output's parts concatenated along dim 0 into a new host tensor.
// The parts must be joinable and on the host.
std::vector<Tensor> join_batches(const std::vector<std::vector<Tensor>>& parts);

}  // namespace tandem
