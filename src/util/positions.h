// Position tables that both the model and the analysis use: the fixed sinusoidal encoding.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace poslab {

// The fixed sinusoidal table of Vaswani et al.: PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(...).
// (positions, dims) float64; the model copies it into its float32 wpe, the analysis uses it as a control.
torch::Tensor sinusoidal_table(int64_t positions, int64_t dims);

}  // namespace poslab
