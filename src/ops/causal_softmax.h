// Causal softmax of attention scores as one op (forward and backward): scale, mask and softmax in one pass
// that never reads the keys after each query.
#pragma once

#include <torch/torch.h>

namespace poslab {

// scores: (BH, T, T) q k^T, float32 or bfloat16, on CPU. Returns softmax(scale * scores) along the last dim
// with every key j > query i masked out (probability 0), in the scores' dtype. Equals
// softmax((scale * scores).masked_fill(triu(1), -inf)) to float rounding (tests/ops/test_causal_softmax.cpp).
torch::Tensor causal_softmax(const torch::Tensor& scores, double scale);

}  // namespace poslab
