// How attention reads the position table: the position-only attention kernel of each head of a layer that sees
// the embeddings directly (layer 0), from plain tensors (the model's weights), never from a model.
//
// For head h with query/key maps W_q^h, W_k^h (and biases) and the layer's LayerNorm LN:
//   x_i = LN(p_i + t̄)     p_i the table's row i, t̄ the mean token embedding (the average token a position carries)
//   s_ij = (x_i W_qᵀ + b_q)^h · (x_j W_kᵀ + b_k)^h / √hs,   A_ij = softmax over the keys j ≤ i of s_ij
// (over every key j for a bidirectional encoder such as BERT's, whose token part t̄ also holds token type 0's row).
// A is the attention that positions alone would produce. docs/analysis.md, "Positional attention kernels", gives
// the summaries and the rule behind each kind.
#pragma once

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace poslab {

// The weights a layer-0 attention reads positions with (float tensors, any dtype; copied to float64).
struct AttentionWeights {
  torch::Tensor table;       // (P, C) position table
  torch::Tensor mean_token;  // (C,) mean token embedding, or undefined for none (positions alone)
  torch::Tensor ln_weight;   // (C,)
  torch::Tensor ln_bias;     // (C,) or undefined
  double ln_eps = 1e-5;
  torch::Tensor c_attn_weight;  // (3C, C): rows [0, C) queries, [C, 2C) keys, [2C, 3C) values
  torch::Tensor c_attn_bias;    // (3C,) or undefined
  int64_t n_head = 1;
  bool causal = true;  // false: every query sees every key (BERT-style encoders)
};

enum class KernelKind { local, sink, decaying, uniform };
const char* kernel_kind_name(KernelKind k);  // "local", "sink", "decaying", "uniform"

// One head's kernel, summarised on the queries of the second half (i >= P/2: each sees at least P/2 keys); for a
// bidirectional kernel on the middle half (P/4 <= i < 3P/4: at least P/4 keys on each side), with offsets as
// distances |i − j| (the entries at offset δ > 0 are A[i, i − δ] + A[i, i + δ]).
struct HeadKernel {
  int head = 0;
  std::vector<double> offset_profile;         // (P,) entry δ: mean of A[i, i − δ] over the queries i >= δ
  double mass_offset0 = 0, mass_offset1 = 0;  // mean A[i, i] and A[i, i − 1]
  double mass_first = 0;                      // mean A[i, 0]: the window's first position (an attention sink)
  double offset50 = 0,
         offset90 = 0;          // median over queries of the smallest δ whose mass A[i, i..i−δ] reaches 50 % / 90 %
  double uniform_offset50 = 0;  // the same for the uniform kernel over the same queries
  std::optional<double> decay_length;  // λ of m(δ) ≈ c·exp(−δ/λ) fitted on δ = 1 … P/2 (none when it does not fall)
  KernelKind kind = KernelKind::decaying;
};

struct AttentionKernels {
  int64_t positions = 0, n_head = 0;
  bool mean_token_added = true;
  bool causal = true;
  torch::Tensor kernels;  // (n_head, P, P) float64: A per head, zero above the diagonal
  std::vector<HeadKernel> heads;
};

// Throws poslab::Error when the shapes do not fit (C divisible by n_head, 3C rows, P >= 4).
AttentionKernels attention_kernels(const AttentionWeights& w);

// The summaries of a kernel matrix A (P, P), rows summing to 1 over j <= i (exposed for tests).
HeadKernel summarise_kernel(const torch::Tensor& A, int head, bool causal = true);

// {"positions", "mean_token_added", "heads": [{head, kind, mass_offset0, mass_offset1, mass_first, offset50, offset90,
// uniform_offset50, decay_length, offset_profile}]}: no (P, P) matrices.
nlohmann::json to_json(const AttentionKernels& k);
std::string kernels_text(const AttentionKernels& k);  // one line per head

// Each head's kind ("local", "decaying", …) in a snapshot's model_stepN.json under `key` ("attention_kernels" or
// "data_attention"; run/run_files.h read_snapshot_usage); empty when the key is absent.
std::vector<std::string> kinds_of(const nlohmann::json& usage, const char* key);

// Layer 0's heads in a few words, from a snapshot's model_stepN.json: how many of each kind on position alone, most
// frequent first ("2 decaying, 1 local, 1 uniform"), then " (on text too)" when each head is of that kind on text as
// well, or " | on text: …" with the counts there. "" without kernels.
std::string head_kinds_words(const nlohmann::json& usage);

}  // namespace poslab
