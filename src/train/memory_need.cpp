#include "train/memory_need.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "util/error.h"
#include "util/memory.h"

namespace poslab {

namespace {

// Counted in double and held to 2^60 (an exbibyte) each: a config far past any machine (a batch of 2·10⁹ sequences of
// 65,536 rows) needs more than any memory, not a product wrapped past int64's end into a small or negative number;
// the five parts' sum stays within int64.
int64_t held(double v) { return v >= 0x1p60 ? int64_t{1} << 60 : static_cast<int64_t>(v); }

}  // namespace

MemoryNeed training_memory_need(const Config& cfg, int64_t vocab_size, int world_size) {
  const ModelConfig& m = cfg.model;
  const double C = m.n_embd, L = m.n_layer, T = m.block_size, b = m.bias ? 1 : 0;
  // Per block: two LayerNorms, c_attn (C -> 3C), c_proj (C -> C), c_fc (C -> 4C), c_proj (4C -> C).
  const double block =
      2 * (C + b * C) + (3 * C * C + b * 3 * C) + (C * C + b * C) + (4 * C * C + b * 4 * C) + (4 * C * C + b * C);
  const double parameters =
      static_cast<double>(vocab_size) * C + (m.position == "none" ? 0 : T * C) + L * block + (C + b * C);
  MemoryNeed need;
  need.parameters = held(parameters);
  need.weights = held(4 * parameters);
  need.gradients = held(4 * parameters);
  need.optimizer = held(8 * parameters);
  // One micro-batch's rows (a process's share of train.batch_size sequences; grad_accum draws that many micro-batches
  // one after another, each of the whole batch_size): the block's inputs and outputs kept for the backward pass, ~16
  // floats of width C per token (LayerNorm outputs, q, k, v, the attention's output, the MLP's 4C twice), plus the
  // embeddings' sum.
  const double rows = static_cast<double>(cfg.train.batch_size / std::max(1, world_size)) * T;
  need.activations = held((cfg.train.dtype == "bfloat16" ? 2 : 4) * rows * C * (16 * L + 1));
  return need;
}

namespace {

// 1071872 -> "1.07 million", 38677659648 -> "38.7 billion", 950 -> "950".
std::string count_for_people(int64_t n) {
  char buf[32];
  if (n >= 1000000000)
    std::snprintf(buf, sizeof buf, "%.3g billion", static_cast<double>(n) / 1e9);
  else if (n >= 1000000)
    std::snprintf(buf, sizeof buf, "%.3g million", static_cast<double>(n) / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

}  // namespace

void check_training_fits(const Config& cfg, int64_t vocab_size, int world_size, const MemoryRoom& room, bool on_gpu) {
  if (memory_check_skipped()) return;
  const MemoryNeed need = training_memory_need(cfg, vocab_size, world_size);
  if (room.bytes < 0 || need.total() <= room.bytes) return;
  const std::string what =
      "model.n_layer " + std::to_string(cfg.model.n_layer) + ", n_embd " + std::to_string(cfg.model.n_embd) +
      ", block_size " + std::to_string(cfg.model.block_size) + ", train.batch_size " +
      std::to_string(cfg.train.batch_size) + ": training needs at least " + format_bytes(need.total()) + " (" +
      count_for_people(need.parameters) + " parameters: weights " + format_bytes(need.weights) + ", gradients " +
      format_bytes(need.gradients) + ", AdamW's state " + format_bytes(need.optimizer) + "; one step's activations " +
      format_bytes(need.activations) + ") but " + (on_gpu ? "the GPU has " : "this process may use ") +
      format_bytes(room.bytes) + ", " + room.limit;
  const int64_t model_state = need.weights + need.gradients + need.optimizer;
  std::string hint =
      model_state > room.bytes
          ? "the model alone does not fit: fewer layers (model.n_layer) or a narrower model (model.n_embd, which the "
            "parameters grow with squared); data-parallel processes each hold the whole model"
          : "the activations do not fit: a smaller micro-batch (halve train.batch_size and double train.grad_accum "
            "to keep the step's batch_size x grad_accum sequences), fewer positions (model.block_size), or "
            "processes on more machines (each takes its share of the batch)";
  if (on_gpu)
    hint += "; train.dtype bfloat16 halves the activations; nvidia-smi shows what else holds the GPU's memory";
  if (const std::string note = memory_check_note(room); !note.empty()) hint += "; " + note;
  throw Error(what, hint);
}

int64_t scoring_memory_need(const ModelConfig& model, int64_t vocab_size, int64_t batch, int64_t length, bool bf16) {
  const double C = model.n_embd, T = static_cast<double>(length), B = static_cast<double>(batch);
  const double logits = (bf16 ? 10 : 8) * B * T * static_cast<double>(vocab_size);
  const double scores = 2 * 4 * B * model.n_head * T * T;
  const double hidden = 4 * B * T * 4 * C;
  return held(logits + std::max(scores, hidden));
}

void check_scoring_fits(const ModelConfig& model, int64_t vocab_size, int64_t batch, int64_t length, bool bf16,
                        const std::string& batch_option, const MemoryRoom& room) {
  if (memory_check_skipped()) return;
  const int64_t need = scoring_memory_need(model, vocab_size, batch, length, bf16);
  if (room.bytes < 0 || need <= room.bytes) return;
  throw Error(batch_option + ": one batch of " + std::to_string(batch) + " windows of " + std::to_string(length) +
                  " tokens needs at least " + format_bytes(need) + " beyond the model (its logits over " +
                  std::to_string(vocab_size) + " token ids alone " +
                  format_bytes(held((bf16 ? 10.0 : 8.0) * static_cast<double>(batch) * static_cast<double>(length) *
                                    static_cast<double>(vocab_size))) +
                  ") but this process may use " + format_bytes(room.bytes) + " more, " + room.limit,
              "pass a smaller --batch-size (and more --batches for as many windows); nothing was written" +
                  (memory_check_note(room).empty() ? "" : "; " + memory_check_note(room)));
}

}  // namespace poslab
