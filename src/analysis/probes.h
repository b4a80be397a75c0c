// Position probes as the literature runs them (Wang & Chen 2020, "What Do Position Embeddings Learn? An Empirical
// Study of Pre-Trained Language Model Positional Encoding", EMNLP), so that a poslab table's numbers compare with
// theirs. poslab's own ridge probe (analysis.h, PositionProbe) stays the per-snapshot one; these are heavier and run
// on request (poslab analyze --probes).
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace poslab {

struct LiteratureProbes {
  int folds = 5;
  // Absolute position: least squares from a row to its index (rows and indices centred, the minimum-norm solution
  // where the rows outnumber nothing: scikit-learn's LinearRegression), 5-fold cross-validated over the rows in a
  // shuffled order; the mean |round(prediction) − i| over the held-out rows.
  double absolute_mae = NAN;
  // Relative position: logistic regression (L2, C = 1, intercept unpenalised: scikit-learn's defaults) from the
  // concatenated rows [w_i; w_j] to "i comes before j", 5-fold cross-validated over the pairs; held-out accuracy.
  double relative_accuracy = NAN;
  int64_t pairs = 0;  // ordered pairs i ≠ j used (all of them, or a seeded sample of at most max_pairs)
};

// `order`: the rows' shuffled order (a permutation of 0 … P − 1); fold f holds its f-th fifth. The pairs are all
// ordered pairs (i, j), i ≠ j, in row-major order, or max_pairs of them drawn with pair_seed; pair k goes to fold
// k mod 5. W float (P, d), P >= 10.
LiteratureProbes literature_probes(const torch::Tensor& W, const std::vector<int64_t>& order, uint64_t pair_seed = 0,
                                   int64_t max_pairs = 4000);
// The same with order = shuffle_permutation(P, seed).
LiteratureProbes literature_probes(const torch::Tensor& W, uint64_t seed);

nlohmann::json to_json(const LiteratureProbes& p);

}  // namespace poslab
