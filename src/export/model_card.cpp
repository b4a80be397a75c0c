#include "export/model_card.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "analysis/analysis.h"
#include "analysis/metric_list.h"
#include "analysis/trajectory.h"
#include "config/config.h"
#include "run/json_records.h"
#include "run/run_folder.h"
#include "util/error.h"
#include "util/json_text.h"

namespace poslab {
namespace fs = std::filesystem;

namespace {

std::string yaml_string(const std::string& s) {  // a double-quoted YAML scalar
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The corpus by name: each file's or folder's own name ("tinyshakespeare", "fortunes").
std::vector<std::string> corpus_names(const Config& cfg) {
  std::vector<std::string> out;
  for (const std::string& c : cfg.data.corpus) {
    const fs::path p = fs::path(c).lexically_normal();
    const std::string name = (p.has_filename() ? p : p.parent_path()).stem().string();
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

std::string number(double v, const char* spec = "{:.4f}") {
  return std::isfinite(v) ? fmt::format(fmt::runtime(spec), v) : "-";
}

std::string count(double v) {
  if (v >= 1e9) return fmt::format("{:.2f}B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

std::string position_words(const Config& c) {
  const std::string& position = c.model.position;
  const ModelConfig& m = c.model;
  if (position == "learned" && is_untrained_extension(c))
    return fmt::format(
        "a learned position table (GPT-2's `wpe`), trained at {} positions with the rest of the model, then stretched "
        "to {} rows by `poslab extend` ({}): its rows {}–{} were not trained",
        m.extended_from, m.block_size, m.extend_method, m.extended_from, m.block_size - 1);
  if (position == "learned" && !c.train.init_from.empty())
    return "a learned position table (GPT-2's `wpe`), trained with the rest of the model from the weights of `" +
           c.train.init_from + "`" +
           (m.extended_from > 0 ? fmt::format(", whose table `poslab extend` had stretched from {} to {} rows ({})",
                                              m.extended_from, m.block_size, m.extend_method)
                                : "");
  if (position == "learned")
    return "a learned position table (GPT-2's `wpe`), trained from random initial values with the rest of the model";
  if (position == "sinusoidal")
    return "the fixed sinusoidal table of the original Transformer, exported as GPT-2's `wpe`";
  return "no position table (`wpe` is zeros): only the causal mask tells it where a token is";
}

}  // namespace

ModelCard model_card(const LoadedModel& m, const std::string& checkpoint, const std::string& dir,
                     int64_t exported_parameters) {
  const Config& c = m.cfg;
  const RunFolder run = RunFolder::of_checkpoint(checkpoint);
  const std::string name = c.run.name.empty() ? run.name() : c.run.name;
  ModelCard card;
  std::string& s = card.text;
  // The metadata block (https://huggingface.co/docs/hub/model-cards).
  s += "---\nlibrary_name: transformers\npipeline_tag: text-generation\ntags:\n- poslab\n- gpt2\n- "
       "position-embeddings\n";
  s += "- position-" + c.model.position + "\n- tokenizer-" + c.data.tokenizer.type + "\n";
  const std::vector<std::string> corpora = corpus_names(c);
  if (!corpora.empty()) {
    s += "datasets:\n";
    for (const std::string& d : corpora) s += "- " + yaml_string(d) + "\n";
  }
  s += "---\n\n";

  int64_t params = 0;
  for (const auto& p : m.model->parameters()) params += p.numel();
  // The context it was trained at: an extension's steps were taken at the rows it was extended from.
  const int64_t trained_context = is_untrained_extension(c) ? c.model.extended_from : c.model.block_size;
  const double tokens = static_cast<double>(m.meta.step) * c.train.batch_size * c.train.grad_accum * trained_context;
  // What GPT-2's layout holds that poslab's model has no use for: zeros, which transformers counts.
  std::string zeros;
  if (exported_parameters != params) {
    if (!c.model.bias) zeros = "zero biases";
    if (c.model.position == "none") zeros += std::string(zeros.empty() ? "" : " and ") + "a position table of zeros";
    zeros = fmt::format(" ({} as transformers counts them, with {})", count(static_cast<double>(exported_parameters)),
                        zeros.empty() ? "GPT-2's layout" : zeros);
  }
  s += fmt::format("# {}\n\n", name);
  s += fmt::format(
      "A GPT-2-style language model of {} parameters{} trained by poslab {}. Its only source of word order "
      "is {}.\n\n",
      count(static_cast<double>(params)), zeros,
      c.model.position == "learned" ? "to watch its position table take shape"
                                    : "as a control beside models whose position table is learned",
      position_words(c));
  s += "It was trained to study position embeddings: it writes text in the manner of its corpus and is not meant for "
       "any other use.\n\n";
  s += "## Training\n\n| | |\n| --- | --- |\n";
  s += fmt::format("| layers, heads, width | {}, {}, {} |\n", c.model.n_layer, c.model.n_head, c.model.n_embd);
  s += fmt::format("| context (the table's rows) | {}{} |\n", c.model.block_size,
                   is_untrained_extension(c)
                       ? fmt::format(", extended from {} by {}", c.model.extended_from, c.model.extend_method)
                       : "");
  s += fmt::format("| position variant | {} |\n", c.model.position);
  s += fmt::format("| tokenizer | sentencepiece {}, {} pieces (new lines are a piece of their own) |\n",
                   c.data.tokenizer.type, m.tokenizer.vocab_size());
  std::string corpus_list;
  for (const std::string& d : c.data.corpus) corpus_list += (corpus_list.empty() ? "`" : ", `") + d + "`";
  s += fmt::format("| corpus | {} |\n", corpus_list);
  s += fmt::format("| steps | {} of batch {} × {} tokens{} |\n", m.meta.step, c.train.batch_size, trained_context,
                   c.train.grad_accum > 1 ? fmt::format(" × {} micro-batches", c.train.grad_accum) : "");
  s += fmt::format("| tokens seen | {} |\n", count(tokens));
  s += fmt::format("| optimizer | AdamW, lr {:g} (cosine to {:g}), weight decay {:g}, {} |\n", c.train.lr,
                   c.train.min_lr, c.train.weight_decay, c.train.dtype);
  // What set the learned table's training apart from the rest's, where something did (configs/circles.yaml's 30×).
  std::vector<std::string> table;
  const TrainConfig plain;
  if (c.train.position_lr_scale != plain.position_lr_scale)
    table.push_back(fmt::format("learning rate × {:g} (`train.position_lr_scale`)", c.train.position_lr_scale));
  if (c.train.decay_position_table != plain.decay_position_table && c.train.weight_decay > 0)
    table.push_back("no weight decay (`train.decay_position_table: false`)");
  if (c.model.wpe_init_std != ModelConfig().wpe_init_std && c.train.init_from.empty())  // else loaded, not drawn
    table.push_back(fmt::format("initialised N(0, {:g}²) (`model.wpe_init_std`)", c.model.wpe_init_std));
  if (c.train.trainable != plain.trainable)
    table.push_back(fmt::format("`train.trainable: {}`: only it trained", c.train.trainable));
  if (c.model.position == "learned" && !table.empty()) {
    std::string row;
    for (const std::string& t : table) row += (row.empty() ? "" : "; ") + t;
    s += "| the position table's training | " + row + " |\n";
  }
  s += fmt::format("| loss at step {} | train {}, validation {} (nats per token) |\n", m.meta.step,
                   number(m.meta.train_loss), number(m.meta.val_loss));
  s += fmt::format("| checkpoint | `{}` |\n\n", checkpoint);

  s += "## The position table\n\n";
  if (c.model.position == "learned" && run.has_snapshots()) {
    try {
      // The snapshots up to the exported checkpoint's step (a best.pt is earlier than the run's end), and the
      // exported table itself, which a snapshot at another step is not.
      std::vector<TrajectoryPoint> points = analyze_run(run.dir());
      points.erase(
          std::remove_if(points.begin(), points.end(), [&](const TrajectoryPoint& p) { return p.step > m.meta.step; }),
          points.end());
      if (points.empty()) {
        s += fmt::format(
            "The run holds no snapshot at or before the checkpoint's step {}, so the card has no verdict.\n\n",
            m.meta.step);
      } else {
        const Verdict v = judge(points);
        s += fmt::format("poslab analysed the table at {} snapshots from step {} to step {}. Verdict: **{}**. {}\n\n",
                         points.size(), points.front().step, points.back().step, outcome_name(v.outcome), v.summary);
      }
      const Analysis exported =
          analyze_table(m.model->wpe->weight.detach().to(torch::kCPU, torch::kFloat32), checkpoint);
      s += fmt::format("| the exported table (step {}) | |\n| --- | --- |\n", m.meta.step);
      for (const Metric& k : headline_metrics()) s += fmt::format("| {} | {} |\n", k.label, format_metric(k, exported));
      s += "\n";
    } catch (const Error& e) {
      spdlog::warn("the model card leaves the verdict out: {}", e.what());
      s += fmt::format("The run's snapshots could not be analysed ({}).\n\n", e.what());
    }
  } else if (c.model.position == "learned") {
    s += fmt::format(
        "The checkpoint is not in a run folder with snapshots ({}), so the card has no verdict: "
        "`poslab analyze` reads the table from the checkpoint itself.\n\n",
        run.dir());
  } else {
    s += "The table was not learned, so there is no verdict on what training made of it.\n\n";
  }
  for (const auto& [stem, caption] : kCardFigures) {
    const std::string png = (fs::path(run.report_dir()) / (std::string(stem) + ".png")).string();
    if (!is_file(png)) continue;
    card.figures.push_back(png);
    s += fmt::format("![{}]({}.png)\n\n*{}.*\n\n", caption, stem, caption);
  }
  if (card.figures.empty() && c.model.position == "learned")
    s += "(No report figures: `poslab report RUN_DIR` draws them; export again to show them here.)\n\n";

  s += fmt::format(
      "## Use\n\n```python\nfrom transformers import AutoTokenizer, GPT2LMHeadModel\n\n"
      "# this folder, where poslab export wrote it (or its name on the Hub, once uploaded)\n"
      "tok = AutoTokenizer.from_pretrained({0})\nmodel = GPT2LMHeadModel.from_pretrained({0})\n",
      json_text(nlohmann::json(dir)));
  s += "# a new line, where poslab sample starts; or a prompt in the manner of the corpus\n"
       "ids = tok(\"\\n\", return_tensors=\"pt\").input_ids\n"
       "# prompt and continuation within the table's rows (n_positions)\n"
       "out = model.generate(ids, do_sample=False, max_new_tokens=" +
       std::to_string(c.model.block_size / 2) +
       ")\n"
       "print(tok.decode(out[0]))\n```\n\n";
  s += "The tokenizer encodes and decodes new lines as poslab does, and the model has no end-of-text token: "
       "`generate` runs for `max_new_tokens`, across lines, as `poslab sample` does.\n";
  return card;
}

}  // namespace poslab
