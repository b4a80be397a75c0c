// poslab extend: a trained model's context stretched from T to N positions by rebuilding its learned table.
//
// New row j of the N-row table sits at old position x_j = j·(T−1)/(N−1) (linear, cubic, nearest), or is a copy:
//   linear   (1 − t)·w_⌊x⌋ + t·w_⌈x⌉, t = x − ⌊x⌋ (rows 0 and N−1 are the old rows 0 and T−1)
//   cubic    Catmull-Rom spline: the cubic Hermite curve through the rows with tangents (w_{k+1} − w_{k−1})/2,
//            one-sided w_1 − w_0 and w_{T−1} − w_{T−2} at the ends; exact on linear tables
//   nearest  w_round(x), halves rounded up
//   copy     w_{j mod T}: the table tiled, as Longformer extends RoBERTa's
//   random   the T trained rows kept, the others drawn N(0, model.wpe_init_std²) as at step 0 (the control)
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace poslab {

const std::vector<std::string>& extend_methods();  // linear, cubic, nearest, copy, random

// W: (T, C) -> (N, C) in W's dtype. `init_std` and `seed` are used by random only.
// Throws poslab::Error for an unknown method or N <= T.
torch::Tensor extend_table(const torch::Tensor& W, int64_t N, const std::string& method, double init_std = 0.02,
                           uint64_t seed = 0);

struct ExtendRequest {
  std::string checkpoint;  // the trained model
  int64_t to = 0;          // N, the new block_size
  std::string method = "linear";
  std::string out;     // default: RUN_DIR/extend/N-METHOD/checkpoint.pt
  int64_t seed = -1;   // random's draws; -1 = the run's run.seed
  bool force = false;  // overwrite an existing out
};

struct ExtendResult {
  std::string checkpoint;      // the extended checkpoint written
  std::string extension_json;  // beside it: what was done, and the table's metrics before and after
  std::string table_npy;       // beside it: the extended position table, (to, n_embd) float32 (what the report draws)
  int64_t from = 0, to = 0;
  std::string summary;  // a few lines for the terminal
};

// Writes a checkpoint whose model has block_size N: the extended table, every other weight, the tokenizer, the
// step and the RNG states as they were; no optimizer state (the moments of a T-row table fit no N-row one) and
// unknown losses. Its config records model.extended_from = T and model.extend_method, no train.init_from, and names
// a new run (run.name NAME-extN-METHOD) for poslab train --init-from. An extension not trained since is refused (its
// source is the one to extend). Throws poslab::Error naming the checkpoint or option.
ExtendResult extend_checkpoint(const ExtendRequest& req);

}  // namespace poslab
