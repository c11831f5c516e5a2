#pragma once
// Training-mode batch norm on channels-last activations through cuDNN's
// persistent NHWC kernels (cudnnBatchNormalizationForwardTrainingEx /
// BackwardEx, as PyTorch runs it for channels-last): the walk of our own
// kernels (cuda/batchnorm_train.cu) strides by C between a channel's values
// there. Same semantics as the table entry: batch mean and biased variance,
// running statistics updated with the unbiased one, and the same saved
// state read only by this file's backward: u8 [8 C + reserve], the mean and
// inverse standard deviation (f32) then cuDNN's reserve space.
#include "cuda/train_context.h"

namespace tandem::cuda::train {

// Whether this path takes the call: x nhwc, training.
bool cudnn_batch_norm_takes(const ops::BatchNormParams& p, const Tensor& x);

void cudnn_batch_norm_forward(TrainContext& c, const ops::BatchNormParams& p, const Tensor& x,
                              const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& y, Tensor* saved,
                              const ErrorContext& where);
void cudnn_batch_norm_backward(TrainContext& c, const ops::BatchNormParams& p, const Tensor& x,
                               const Tensor& gamma, const Tensor& saved, const Tensor& dy,
                               const GradOut& dx, const GradOut& dgamma, const GradOut& dbeta,
                               const ErrorContext& where);

// relu(batch_norm(x) + z) (z optional) in one cuDNN pass (BN_ACTIVATION /
// BN_ADD_ACTIVATION): false, nothing written, unless x is f16 nhwc in
// training with C % 4 == 0, z like x, and cuDNN has its persistent kernel
// for the shape (bf16 is not asked for: not measured on the GPU yet). The
// saved state is laid out as above.
bool cudnn_batch_norm_relu_forward(TrainContext& c, const ops::BatchNormParams& p, const Tensor& x,
                                   const Tensor& z, const Tensor& gamma, const Tensor& beta,
                                   const Tensor& running_mean, const Tensor& running_var,
                                   const Tensor& y, Tensor* saved, const ErrorContext& where);
// dy like y -> dx, dz (when z was given), dgamma, dbeta; y is the forward's
// output (cuDNN masks dy with it).
void cudnn_batch_norm_relu_backward(TrainContext& c, const ops::BatchNormParams& p, const Tensor& x,
                                    const Tensor& z, const Tensor& gamma, const Tensor& beta,
                                    const Tensor& y, const Tensor& saved, const Tensor& dy,
                                    const GradOut& dx, const GradOut& dz, const GradOut& dgamma,
                                    const GradOut& dbeta, const ErrorContext& where);

}  // namespace tandem::cuda::train
