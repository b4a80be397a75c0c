#include "analysis/probes.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "analysis/analysis.h"
#include "util/error.h"

namespace poslab {
namespace {

// Mean |round(prediction) − i| over held-out rows, 5-fold, least squares on centred rows and indices.
double absolute_probe(const torch::Tensor& W, const std::vector<int64_t>& order, int folds) {
  const int64_t P = W.size(0);
  double err = 0;
  for (int f = 0; f < folds; ++f) {
    const int64_t lo = f * P / folds, hi = (f + 1) * P / folds;
    std::vector<int64_t> train, test;
    for (int64_t k = 0; k < P; ++k) (k >= lo && k < hi ? test : train).push_back(order[k]);
    const auto ti = torch::tensor(train, torch::kInt64), si = torch::tensor(test, torch::kInt64);
    const auto X = W.index_select(0, ti), y = ti.to(torch::kFloat64);
    const auto mx = X.mean(0, true);
    const double my = y.mean().item<double>();
    const auto beta = torch::linalg_pinv(X - mx).matmul(y - my);  // (d,) the minimum-norm least-squares solution
    const auto pred = (W.index_select(0, si) - mx).matmul(beta) + my;
    err += (pred.round() - si.to(torch::kFloat64)).abs().sum().item<double>();
  }
  return err / static_cast<double>(P);
}

// Logistic regression, min ½‖w‖² + Σ log(1 + exp(−s_k (x_kᵀw + b))), b unpenalised, by Newton's method.
torch::Tensor fit_logistic(const torch::Tensor& X, const torch::Tensor& t) {  // X (n, p), t (n,) in {0, 1}
  const int64_t p = X.size(1);
  const auto Xb = torch::cat({X, torch::ones({X.size(0), 1}, torch::kFloat64)}, 1);  // (n, p + 1)
  auto reg = torch::ones({p + 1}, torch::kFloat64);
  reg[p] = 0;  // the intercept
  auto w = torch::zeros({p + 1}, torch::kFloat64);
  for (int it = 0; it < 50; ++it) {
    const auto prob = torch::sigmoid(Xb.matmul(w));
    const auto grad = reg * w + Xb.transpose(0, 1).matmul(prob - t);
    const auto H = torch::diag(reg) + (Xb.transpose(0, 1) * (prob * (1 - prob))).matmul(Xb) +
                   1e-12 * torch::eye(p + 1, torch::kFloat64);
    const auto step = torch::linalg_solve(H, grad.unsqueeze(1)).squeeze(1);
    w = w - step;
    if (step.abs().max().item<double>() < 1e-10) break;
  }
  return w;
}

double relative_probe(const torch::Tensor& W_in, uint64_t pair_seed, int64_t max_pairs, int folds, int64_t* used) {
  const int64_t P = W_in.size(0);
  // With fewer rows than columns, W = U S Vᵀ and the rows' coordinates U S (P, P) give the same problem exactly:
  // the L2-penalised optimum lies in the span of the pairs' features, [V a; V b], where xᵀw and ‖w‖ are those of
  // [U_i S; U_j S] and (a; b). A 64 × 768 table then fits 2·64 weights instead of 2·768.
  torch::Tensor W = W_in;
  if (P < W_in.size(1)) {
    const auto usv = torch::linalg_svd(W_in, /*full_matrices=*/false);
    W = std::get<0>(usv) * std::get<1>(usv);  // (P, P)
  }
  std::vector<std::pair<int64_t, int64_t>> pairs;
  if (P * (P - 1) <= max_pairs) {
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < P; ++j)
        if (i != j) pairs.emplace_back(i, j);
  } else {
    std::mt19937_64 rng(pair_seed);
    std::uniform_int_distribution<int64_t> row(0, P - 1);
    while (static_cast<int64_t>(pairs.size()) < max_pairs) {
      const int64_t i = row(rng), j = row(rng);
      if (i != j) pairs.emplace_back(i, j);
    }
  }
  *used = static_cast<int64_t>(pairs.size());
  std::vector<int64_t> a, b;
  for (const auto& [i, j] : pairs) a.push_back(i), b.push_back(j);
  const auto ai = torch::tensor(a, torch::kInt64), bi = torch::tensor(b, torch::kInt64);
  const auto X = torch::cat({W.index_select(0, ai), W.index_select(0, bi)}, 1);  // (n, 2d)
  const auto t = (ai < bi).to(torch::kFloat64);
  const auto fold = torch::arange(static_cast<int64_t>(pairs.size()), torch::kInt64) % folds;
  double correct = 0;
  for (int f = 0; f < folds; ++f) {
    const auto train = fold != f, test = fold == f;
    const auto w = fit_logistic(X.index({train}), t.index({train}));
    const auto Xt = X.index({test});
    const auto score = Xt.matmul(w.slice(0, 0, Xt.size(1))) + w[Xt.size(1)];
    correct += ((score > 0).to(torch::kFloat64) == t.index({test})).to(torch::kFloat64).sum().item<double>();
  }
  return correct / static_cast<double>(pairs.size());
}

}  // namespace

LiteratureProbes literature_probes(const torch::Tensor& W_in, const std::vector<int64_t>& order, uint64_t pair_seed,
                                   int64_t max_pairs) {
  const auto W = W_in.detach().to(torch::kCPU, torch::kFloat64);
  const int64_t P = W.size(0);
  if (W.dim() != 2 || P < 10) throw Error("literature probes: a (P, d) table with P >= 10 rows is needed");
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < P; ++i)
    if (static_cast<int64_t>(sorted.size()) != P || sorted[i] != i)
      throw Error("literature probes: the order must list every row once");
  LiteratureProbes p;
  p.absolute_mae = absolute_probe(W, order, p.folds);
  p.relative_accuracy = relative_probe(W, pair_seed, max_pairs, p.folds, &p.pairs);
  return p;
}

LiteratureProbes literature_probes(const torch::Tensor& W, uint64_t seed) {
  return literature_probes(W, shuffle_permutation(W.size(0), seed), seed);
}

nlohmann::json to_json(const LiteratureProbes& p) {
  return {{"protocol",
           "Wang & Chen 2020: 5-fold CV; linear regression row -> index (MAE after rounding); logistic "
           "regression [w_i; w_j] -> i < j (accuracy)"},
          {"folds", p.folds},
          {"absolute_mae", p.absolute_mae},
          {"relative_accuracy", p.relative_accuracy},
          {"pairs", p.pairs}};
}

}  // namespace poslab
