#pragma once
// All layer modules (train/layers/).
#include "train/layers/basic_block.h"
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/convnext_block.h"
#include "train/layers/init.h"
#include "train/layers/layer_norm.h"
#include "train/layers/linear.h"
#include "train/layers/module.h"
#include "train/layers/sequential.h"
#include "train/layers/stateless.h"
