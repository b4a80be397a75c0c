#include "cli/model_cmds.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <numeric>

#include "analysis/analysis.h"
#include "analysis/format.h"
#include "cli/validators.h"
#include "data/dataset.h"
#include "data/text_stream.h"
#include "extend/extend.h"
#include "load/loaded_model.h"
#include "load/model_tables.h"
#include "run/run_files.h"
#include "run/run_folder.h"
#include "train/evaluate.h"
#include "train/memory_need.h"
#include "train/progress.h"
#include "util/cuda.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/memory.h"
#include "util/output_paths.h"
#include "util/platform.h"
#include "util/plural.h"
#include "util/shell.h"
#include "util/utf8.h"
#include "util/wrap.h"

namespace poslab {
namespace fs = std::filesystem;

namespace {

void add_device_option(CLI::App* cmd, std::string& device) {
  cmd->add_option("--device", device, "auto (CUDA when present) | cpu | cuda")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
}

}  // namespace

CLI::App* add_inspect_command(CLI::App& app, InspectArgs& a) {
  auto* cmd = app.add_subcommand("inspect", "what a checkpoint or a model folder holds");
  cmd->footer(
      "A checkpoint: its config, step, sizes, losses, tokenizer and position table. A Hugging Face model folder: "
      "its files and position tables.");
  cmd->add_option("checkpoint", a.checkpoint,
                  "RUN_DIR/checkpoints/latest.pt or best.pt (RUN_DIR: its latest.pt), or a model folder / .safetensors")
      ->type_name("PATH")
      ->check(kNotAnOption)
      ->required()
      ->transform(kRunFolderToCheckpoint);
  return cmd;
}

namespace {

// poslab inspect MODEL: a Hugging Face folder's files, config and position tables.
int inspect_model_folder(const std::string& path) {
  const ModelFolder m = open_model_folder(path);
  WrappedLines wrapped(std::cout, terminal_width(STDOUT_FILENO));  // its lines within the terminal's width
  std::ostream out(&wrapped);
  int64_t params = 0;
  std::map<std::string, int> dtypes;
  for (const auto& [name, w] : m.tensors) {
    params += std::accumulate(w.entry.shape.begin(), w.entry.shape.end(), int64_t{1}, std::multiplies<>());
    ++dtypes[w.entry.dtype];
  }
  std::string types;
  for (const auto& [d, n] : dtypes) types += fmt::format("{}{} {}", types.empty() ? "" : ", ", n, d);
  out << fmt::format("model        {} ({}, {}: {}; {} parameters)\n", path,
                     counted(static_cast<int64_t>(m.files.size()), "file"),
                     counted(static_cast<int64_t>(m.tensors.size()), "tensor"), types, grouped(params));
  out << "config       "
      << (m.config_path.empty() ? std::string("none (no config.json: the family is read from the names)")
                                : m.config_path)
      << "\n";
  out << "tables       " << tables_text(find_position_tables(m.config, tensor_shapes(m)));
  return 0;
}

}  // namespace

int run_inspect(const InspectArgs& a) {
  if (is_model_folder(a.checkpoint) || fs::path(a.checkpoint).extension() == ".safetensors")
    return inspect_model_folder(a.checkpoint);
  std::error_code ec;
  if (fs::is_directory(a.checkpoint, ec))  // neither kind of folder (a run folder is its checkpoint by now)
    throw Error(a.checkpoint + ": neither a run folder (no checkpoints/latest.pt) nor a model folder (no config.json)",
                "inspect takes a run folder, a checkpoint .pt, a Hugging Face model folder or a .safetensors file");
  const LoadedModel m = load_model(a.checkpoint);
  {
    // Its lines within the terminal's width; the config after them as YAML, untouched.
    WrappedLines wrapped(std::cout, terminal_width(STDOUT_FILENO));
    std::ostream out(&wrapped);
    auto loss = [](double v) { return std::isfinite(v) ? fmt::format("{:.4f}", v) : std::string("unknown"); };
    out << fmt::format("checkpoint   {} (format {})\n", a.checkpoint, m.meta.format_version);
    out << fmt::format("step         {} of train.max_steps {}\n", m.meta.step, m.cfg.train.max_steps);
    out << fmt::format("parameters   {} ({} without the position table)\n", grouped(m.model->num_params()),
                       grouped(m.model->num_params(false)));
    out << fmt::format("model        n_layer {} | n_head {} | n_embd {} | block_size {} | position {}\n",
                       m.cfg.model.n_layer, m.cfg.model.n_head, m.cfg.model.n_embd, m.cfg.model.block_size,
                       m.cfg.model.position);
    // a run stopped between evals: its losses are an earlier step's
    const int64_t eval_step = m.meta.eval_step;
    out << fmt::format("loss         {}train {} | val {} | best val {}\n",
                       eval_step >= 0 && eval_step != m.meta.step && std::isfinite(m.meta.val_loss)
                           ? fmt::format("the eval of step {}: ", eval_step)
                           : "",
                       loss(m.meta.train_loss), loss(m.meta.val_loss), loss(m.meta.best_val_loss));
    out << fmt::format("tokenizer    sentencepiece {} | {} pieces | {} bytes, stored in the checkpoint\n",
                       m.cfg.data.tokenizer.type, m.tokenizer.vocab_size(), m.meta.tokenizer_model.size());
    if (m.model->wpe) {
      out << "position table\n" << summary_text(analyze_table(m.model->position_table(), "wpe.weight"));
    } else {
      out << "position table none (model.position = none)\n";
    }
  }
  std::cout << "config\n" << to_yaml(m.cfg);
  return 0;
}

CLI::App* add_sample_command(CLI::App& app, SampleArgs& a) {
  auto* cmd = app.add_subcommand("sample", "generate text from a checkpoint");
  cmd->add_option("checkpoint", a.checkpoint, "RUN_DIR/checkpoints/latest.pt or best.pt (RUN_DIR: its latest.pt)")
      ->type_name("PATH")
      ->check(kNotAnOption)
      ->required()
      ->transform(kRunFolderToCheckpoint);
  cmd->add_option("--prompt", a.prompt, "text to continue (default: start from a new line)");
  cmd->add_option("--tokens", a.options.tokens, "new tokens to generate")->capture_default_str()->check(kNonNegative);
  cmd->add_option("--temperature", a.options.temperature, "0 = greedy")->capture_default_str()->check(kNonNegative);
  cmd->add_option("--top-k", a.options.top_k, "sample among the k most likely tokens; 0 = all")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--seed", a.options.seed, "same seed, same text")->capture_default_str()->check(kSeed);
  add_device_option(cmd, a.device);
  return cmd;
}

int run_sample(const SampleArgs& a) {
  LoadedModel m = load_model(a.checkpoint, torch::Device(resolve_device(a.device, "--device")));
  std::string text = a.prompt;
  if (const size_t replaced = sanitize_utf8(text); replaced > 0)  // as the corpus is read
    spdlog::warn("--prompt: {} byte{} of invalid UTF-8 replaced by U+FFFD", replaced, replaced == 1 ? "" : "s");
  const std::vector<int> prompt = m.tokenizer.encode(text);
  const int start = m.tokenizer.newline_id() >= 0 ? m.tokenizer.newline_id() : 0;
  if (a.options.top_k >= m.model->vocab_size)  // every token is among the k most likely: --top-k 0
    spdlog::warn("--top-k {}: the vocabulary has {} tokens, so every token is sampled from (as --top-k 0)",
                 a.options.top_k, m.model->vocab_size);
  // The text as it is drawn (TextStream). A pipe or a file gets the bytes as decoded; a terminal, no control
  // character of them (ESC would drive it).
  const bool terminal = ::isatty(STDOUT_FILENO) != 0;
  size_t made_safe = 0;
  TextStream stream(m.tokenizer, [&](std::string text) {
    if (terminal) made_safe += make_terminal_safe(text);
    std::cout << text << std::flush;
  });
  for (const int id : prompt) stream.add(id);  // with no prompt, the start token is not part of the text
  generate(m.model, prompt, a.options, start, [&](int id) { stream.add(id); });
  stream.finish();
  std::cout << "\n";
  if (made_safe > 0)
    spdlog::info("the text's control characters are shown as symbols (␛ for ESC); a pipe gets the bytes as they are");
  return 0;
}

CLI::App* add_eval_command(CLI::App& app, EvalArgs& a) {
  auto* cmd = app.add_subcommand("eval", "a checkpoint's loss, perplexity, loss by position");
  cmd->add_option("checkpoint", a.checkpoint, "RUN_DIR/checkpoints/latest.pt or best.pt (RUN_DIR: its latest.pt)")
      ->type_name("PATH")
      ->check(kNotAnOption)
      ->required()
      ->transform(kRunFolderToCheckpoint);
  cmd->add_option("--split", a.split, "val | train")->capture_default_str()->check(CLI::IsMember({"val", "train"}));
  cmd->add_option("--batches", a.batches, "batches to score (default: the run's train.eval_batches)")->check(kPositive);
  cmd->add_option("--batch-size", a.batch_size, "sequences per batch (default: the run's train.batch_size)")
      ->check(kPositive);
  cmd->add_option("--out", a.out,
                  "per-position CSV (default: RUN_DIR/eval/per_position_loss_SPLIT.csv, with --shift "
                  "RUN_DIR/eval/shift_loss_SPLIT.csv)")
      ->type_name("FILE")
      ->check(kNotAnOption);
  cmd->add_option("--shift", a.shifts,
                  "start rows S,S,... of the table: the same windows, of block_size − the largest S "
                  "tokens, read at rows S … S + length − 1 (loss against start offset), e.g. --shift 0,16,64")
      ->delimiter(',')
      ->check(CLI::Validator(
          [](std::string& s) { return s.empty() ? "expected start rows, e.g. --shift 0,16,64" : leading_zero(s); },
          ""));
  cmd->add_option("--corpus", a.corpus,
                  "the run's corpus where it is now, when not at the run's data.corpus (a relative path there is "
                  "read from the folder poslab runs in); other text is scored with a warning: its train/val split "
                  "is not the run's")
      ->type_name("PATH")
      ->check(kNotAnOption);
  cmd->add_flag("--force", a.force, "replace an existing --out file");
  add_device_option(cmd, a.device);
  return cmd;
}

namespace {

// poslab eval CKPT --shift 0,16,32: the loss against the row of the table where the windows start.
int run_shift_eval(const EvalArgs& a, LoadedModel& m, const TokenData& data, int batches, int batch_size,
                   const torch::Device& device) {
  const int64_t T = m.cfg.model.block_size;
  for (size_t i = 0; i < a.shifts.size(); ++i)
    if (std::find(a.shifts.begin(), a.shifts.begin() + static_cast<std::ptrdiff_t>(i), a.shifts[i]) !=
        a.shifts.begin() + static_cast<std::ptrdiff_t>(i))
      throw Error(fmt::format("--shift: {} is given twice", a.shifts[i]), "list each start row once");
  for (int64_t s : a.shifts)
    if (s < 0 || s > T - 2)
      throw Error(
          fmt::format("--shift {}: a start row must be in 0 … {} (block_size {} minus a window of 2)", s, T - 2, T),
          fmt::format("pass start rows within the table, e.g. --shift 0,{},{}", (T - 2) / 4, (T - 2) / 2));
  Progress progress(0, static_cast<int64_t>(batches) * static_cast<int64_t>(a.shifts.size()), true, "batch");
  const ShiftLoss r = evaluate_shifts(m.model, a.split == "val" ? data.val : data.train, batches, batch_size,
                                      eval_seed(m.cfg.run.seed, a.split), m.cfg.train.dtype == "bfloat16", device,
                                      a.shifts, [&](int n) { progress.update(n); });
  progress.clear();
  std::vector<std::vector<double>> by_shift;
  std::cout << fmt::format("{} windows of {} tokens ({} batches x {}), read at table rows S … S + {}:\n", a.split,
                           r.length, batches, batch_size, r.length - 1);
  for (size_t i = 0; i < r.shifts.size(); ++i) {
    std::cout << fmt::format(
        "  shift {:>4}: loss {:.4f}{}\n", r.shifts[i], r.at[i].loss,
        i == 0 ? std::string() : fmt::format(" ({:+.4f} against shift {})", r.at[i].loss - r.at[0].loss, r.shifts[0]));
    by_shift.push_back(r.at[i].by_position);
  }
  const std::string out = a.out.empty() ? RunFolder::of_checkpoint(a.checkpoint).shift_loss(a.split) : a.out;
  write_output_file(out, shift_loss_csv(r.shifts, by_shift));
  std::cout << "wrote " << out << "\n";
  return 0;
}

}  // namespace

int run_eval(const EvalArgs& a) {
  const torch::Device device(resolve_device(a.device, "--device"));
  LoadedModel m = load_model(a.checkpoint, device);
  if (!a.corpus.empty()) m.cfg.data.corpus = a.corpus;
  if (!a.out.empty()) check_output_file(a.out, "--out", a.force, {a.checkpoint}, m.cfg.data.corpus);
  const int batches = a.batches > 0 ? a.batches : m.cfg.train.eval_batches;
  const int batch_size = a.batch_size > 0 ? a.batch_size : m.cfg.train.batch_size;
  check_scoring_fits(m.cfg.model, m.model->vocab_size, batch_size, m.cfg.model.block_size,
                     m.cfg.train.dtype == "bfloat16",
                     a.batch_size > 0 ? fmt::format("--batch-size {}", batch_size)
                                      : fmt::format("train.batch_size {} (the run's)", batch_size),
                     device.is_cuda() ? cuda_memory_room() : memory_room());
  const int threads = apply_threads(m.cfg.run.threads);
  for (const std::string& p : m.cfg.data.corpus) {  // the run's own corpus, from the checkpoint's config
    std::error_code ec;
    if (fs::exists(p, ec)) continue;
    if (!a.corpus.empty()) throw Error("--corpus " + p + ": not found", "name the run's corpus where it is now");
    const bool relative = fs::path(p).is_relative();
    throw Error(a.checkpoint + ": the run's corpus " + p + " is not there (data.corpus in the checkpoint's config)" +
                    (relative ? ", read from the current folder " + fs::current_path(ec).string() : ""),
                (relative ? std::string("run eval from the folder the run was trained in, or ") : std::string()) +
                    "give its place with --corpus PATH (or put it back at that path): eval scores the run's own "
                    "held-out text");
  }
  const TokenData data = prepare_tokens(m.cfg, threads, &m.tokenizer);
  if (!m.meta.corpus_hash.empty() && m.meta.corpus_hash != data.corpus_hash) {
    std::string corpus;
    for (const std::string& p : m.cfg.data.corpus) corpus += (corpus.empty() ? "" : ", ") + p;
    if (a.corpus.empty())
      spdlog::warn(
          "{}: the corpus changed since the checkpoint was written (data.corpus: [{}]): these losses score "
          "other text than the run's own split",
          a.checkpoint, corpus);
    else
      spdlog::warn(
          "--corpus {}: not the text {} was trained on: these losses score other text than the run's own "
          "split",
          corpus, a.checkpoint);
  }
  // Windows drawn beyond the split's size read its tokens again: said, with the time it takes
  const std::vector<int32_t>& split = a.split == "val" ? data.val : data.train;
  const double read = static_cast<double>(batches) * batch_size * m.cfg.model.block_size;
  if (a.batches > 0 && read > 2.0 * static_cast<double>(split.size()))
    spdlog::warn(
        "--batches {}: {} windows of {} tokens hold {:.0f}× the {} split's {} tokens, so they overlap: "
        "the loss changes little past the split's size, and each batch takes its time",
        batches, grouped(static_cast<int64_t>(batches) * batch_size), m.cfg.model.block_size,
        read / static_cast<double>(split.size()), a.split, grouped(static_cast<int64_t>(split.size())));
  if (!a.shifts.empty()) return run_shift_eval(a, m, data, batches, batch_size, device);
  Progress progress(0, batches, true, "batch");  // drawn only on a terminal
  const PositionLoss r = evaluate_positions(m.model, a.split == "val" ? data.val : data.train, batches, batch_size,
                                            eval_seed(m.cfg.run.seed, a.split), m.cfg.train.dtype == "bfloat16", device,
                                            0, 0, [&](int n) { progress.update(n); });
  progress.clear();
  const std::string out = a.out.empty() ? RunFolder::of_checkpoint(a.checkpoint).position_loss(a.split) : a.out;
  write_output_file(out, position_loss_csv(r.by_position));
  const auto& p = r.by_position;
  std::cout << fmt::format("{} (step {})\n", a.checkpoint, m.meta.step);  // which model was scored
  std::cout << fmt::format("{} loss {:.4f} | perplexity {:.2f} | {} tokens ({} batches x {} x {})\n", a.split, r.loss,
                           std::exp(r.loss), r.tokens, batches, batch_size, p.size());
  std::cout << fmt::format("loss by position: 0: {:.3f} | 1: {:.3f} | {}: {:.3f} | {}: {:.3f} (last)\n", p[0], p[1],
                           p.size() / 2, p[p.size() / 2], p.size() - 1, p.back());
  if (m.cfg.model.extended_from > 0) {  // the trained positions against the new ones
    const auto T = static_cast<std::ptrdiff_t>(m.cfg.model.extended_from);
    const double inside = std::accumulate(p.begin(), p.begin() + T, 0.0) / static_cast<double>(T);
    const double beyond = std::accumulate(p.begin() + T, p.end(), 0.0) / static_cast<double>(p.size() - T);
    std::cout << fmt::format(
        "extended from {} by {}: {} loss at the trained positions 0-{}: {:.4f} | at the new {}-{}: "
        "{:.4f}\n",
        T, m.cfg.model.extend_method, a.split, T - 1, inside, T, p.size() - 1, beyond);
  }
  std::cout << "wrote " << out << "\n";
  return 0;
}

CLI::App* add_extend_command(CLI::App& app, ExtendArgs& a) {
  auto* cmd = app.add_subcommand("extend", "stretch a checkpoint's context to N positions");
  cmd->footer("Rebuilds the learned table at N rows; then: poslab eval, poslab train --init-from.");
  cmd->add_option("checkpoint", a.checkpoint, "RUN_DIR/checkpoints/best.pt or latest.pt (RUN_DIR: its latest.pt)")
      ->type_name("PATH")
      ->check(kNotAnOption)
      ->required()
      ->transform(kRunFolderToCheckpoint);
  cmd->add_option("--to", a.to, "the new block_size N (more than the model's)")->required()->check(kPositive);
  cmd->add_option("--method", a.method, "linear | cubic | nearest | copy | random (the control)")
      ->capture_default_str()
      ->check(CLI::IsMember(extend_methods()));
  cmd->add_option("--out", a.out, "the extended checkpoint (default: RUN_DIR/extend/N-METHOD/checkpoint.pt)")
      ->type_name("FILE")
      ->check(kNotAnOption);
  cmd->add_option("--seed", a.seed, "random: the seed of the new rows (default: the run's run.seed)")
      ->type_name("UINT")  // -1 inside, for "the run's"; a seed given is 0 or more, as sample's
      ->check(kSeed);
  cmd->add_flag("--force", a.force, "overwrite an existing --out");
  return cmd;
}

int run_extend(const ExtendArgs& a) {
  if (a.seed >= 0 && a.method != "random")  // it would be ignored
    throw Error("--seed " + std::to_string(a.seed) + ": applies to --method random (the only one that draws rows)",
                "leave --seed out: --method " + a.method + " draws nothing");
  ExtendRequest req;
  req.checkpoint = a.checkpoint;
  req.to = a.to;
  req.method = a.method;
  req.out = a.out;
  req.seed = a.seed;
  req.force = a.force;
  const ExtendResult r = extend_checkpoint(req);
  std::cerr << wrap_lines(r.summary, terminal_width(STDERR_FILENO));
  std::cerr << "next: poslab eval " << shell_word(r.checkpoint) << "\n      poslab train --init-from "
            << shell_word(r.checkpoint) << " --set train.max_steps=200\n";
  std::cout << r.checkpoint << "\n";
  return 0;
}

}  // namespace poslab
