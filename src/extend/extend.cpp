#include "extend/extend.h"

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "analysis/analysis.h"
#include "analysis/metric_list.h"
#include "config/config.h"
#include "formats/npy.h"
#include "load/loaded_model.h"
#include "run/run_files.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_text.h"
#include "util/output_paths.h"
#include "util/plural.h"
#include "util/shell.h"

namespace poslab {
namespace fs = std::filesystem;

const std::vector<std::string>& extend_methods() {
  static const std::vector<std::string> methods = {"linear", "cubic", "nearest", "copy", "random"};
  return methods;
}

namespace {

void check_more_rows(int64_t T, int64_t N) {
  if (N <= T)
    throw Error("--to " + std::to_string(N) + ": the table already has " + std::to_string(T) + " rows",
                "extend to more positions than the model has, e.g. --to " + std::to_string(2 * T));
}

}  // namespace

torch::Tensor extend_table(const torch::Tensor& table, int64_t N, const std::string& method, double init_std,
                           uint64_t seed) {
  const auto& ok = extend_methods();
  if (std::find(ok.begin(), ok.end(), method) == ok.end())
    throw Error("--method " + method + ": unknown", "use one of linear, cubic, nearest, copy, random");
  const int64_t T = table.size(0);
  check_more_rows(T, N);
  TORCH_CHECK(T >= 2, "extend_table: a table of ", T, " rows");
  const auto W = table.detach().to(torch::kCPU, torch::kFloat64).contiguous();  // (T, C)
  torch::Tensor out;                                                            // (N, C)
  if (method == "copy") {
    out = W.index_select(0, torch::arange(N, torch::kInt64).remainder(T));
  } else if (method == "random") {
    auto gen = at::detail::createCPUGenerator(seed);
    out = torch::cat({W, init_std * at::randn({N - T, W.size(1)}, gen, torch::kFloat64)});
  } else {
    // Old position of each new row, in float64: x_j = j (T − 1) / (N − 1).
    const auto x = torch::arange(N, torch::kFloat64) * (static_cast<double>(T - 1) / static_cast<double>(N - 1));
    const auto lo = x.floor().clamp_max(T - 1).to(torch::kInt64);
    const auto hi = (lo + 1).clamp_max(T - 1);
    if (method == "nearest") {
      out = W.index_select(0, (x + 0.5).floor().clamp_max(T - 1).to(torch::kInt64));
    } else {
      const auto t = (x - lo.to(torch::kFloat64)).unsqueeze(1);  // (N, 1) in [0, 1)
      const auto w0 = W.index_select(0, lo), w1 = W.index_select(0, hi);
      if (method == "linear") {
        out = w0 + t * (w1 - w0);
      } else {  // cubic: Catmull-Rom tangents, one-sided at the ends
        auto m = torch::empty_like(W);
        m[0] = W[1] - W[0];
        m[T - 1] = W[T - 1] - W[T - 2];
        if (T > 2) m.slice(0, 1, T - 1) = (W.slice(0, 2) - W.slice(0, 0, T - 2)) / 2;
        const auto m0 = m.index_select(0, lo), m1 = m.index_select(0, hi);
        const auto t2 = t * t, t3 = t2 * t;
        out = (2 * t3 - 3 * t2 + 1) * w0 + (t3 - 2 * t2 + t) * m0 + (-2 * t3 + 3 * t2) * w1 + (t3 - t2) * m1;
      }
    }
    out[N - 1] = W[T - 1];  // the last row exactly, whatever the float rounding of x
  }
  return out.to(table.scalar_type());
}

namespace {

nlohmann::json metrics_json(const Analysis& a) {
  nlohmann::json j;
  for (const Metric& m : scalar_metrics()) j[m.key] = metric_json(m, a);
  return j;
}

}  // namespace

ExtendResult extend_checkpoint(const ExtendRequest& req) {
  LoadedModel m = load_model(req.checkpoint);
  if (m.cfg.model.position != "learned")
    throw Error(
        req.checkpoint + ": model.position is " + m.cfg.model.position + ": there is no learned table to extend",
        m.cfg.model.position == "sinusoidal"
            ? "a sinusoidal table is a formula: train or evaluate with a larger model.block_size instead"
            : "a model without a position table needs no extension");
  const int64_t T = m.cfg.model.block_size, C = m.cfg.model.n_embd;
  if (is_untrained_extension(m.cfg)) {  // rows interpolated from interpolated rows, and T taken for the trained rows
    std::string source = "the checkpoint it came from (" + extension_info_path(req.checkpoint) + " names it)";
    try {
      source = shell_word(read_extension_info(extension_info_path(req.checkpoint)).source);
    } catch (const Error&) {  // moved or copied without it
    }
    std::string again = fmt::format("poslab extend {} --to {} --method {}", source, req.to, req.method);
    if (req.seed >= 0) again += " --seed " + std::to_string(req.seed);  // the same command but for its source
    if (!req.out.empty()) again += " --out " + shell_word(req.out);
    if (req.force) again += " --force";
    throw Error(
        fmt::format("{}: is itself an extension, from {} to {} positions by {}, not trained since: its rows "
                    "{}-{} were never trained",
                    req.checkpoint, m.cfg.model.extended_from, T, m.cfg.model.extend_method, m.cfg.model.extended_from,
                    T - 1),
        fmt::format("extend the trained model instead: {}; or train this one first: poslab train --init-from {}", again,
                    shell_word(req.checkpoint)));
  }
  check_more_rows(T, req.to);
  if (req.to > std::numeric_limits<int>::max())
    throw Error("--to " + std::to_string(req.to) + ": more positions than a model may have (at most " +
                    std::to_string(std::numeric_limits<int>::max()) + ")",
                "extend to fewer positions, e.g. --to " + std::to_string(2 * T));

  // What is cheap to check first: the new config, the files to write, the room for the extended table's analysis.
  Config cfg = m.cfg;
  cfg.model.block_size = static_cast<int>(req.to);
  cfg.model.extended_from = static_cast<int>(T);
  cfg.model.extend_method = req.method;
  cfg.train.init_from.clear();  // its weights came from req.checkpoint (NAME.extension.json); a run from it sets this
  cfg.run.name = fmt::format("{}-ext{}-{}", m.cfg.run.name, req.to, req.method);
  validate(cfg);
  const std::string out =
      req.out.empty() ? RunFolder::of_checkpoint(req.checkpoint).extension_checkpoint(req.to, req.method) : req.out;
  const std::string json_path = extension_info_path(out);
  const std::string npy_path = extension_table_path(out);
  std::error_code ec;
  if (fs::is_directory(out, ec))
    throw Error("--out " + out + ": is a folder; a checkpoint's name ends in .pt",
                "name a file in it, e.g., " + (fs::path(out) / "checkpoint.pt").lexically_normal().string());
  if (fs::path(out).extension() != ".pt")  // beside it go NAME.wpe.npy and NAME.extension.json
    throw Error("--out " + out + ": a checkpoint's name ends in .pt",
                "name it, e.g., " + fs::path(out).replace_extension(".pt").string());
  // The checkpoint and the two files beside it: never the input, never an existing file without --force.
  const std::string named = req.out.empty() ? "the extension" : "--out";
  // An extension's checkpoint is written first: one stopped after it left it without the two files beside it.
  if (!req.force && fs::is_regular_file(out, ec) && !fs::equivalent(out, req.checkpoint, ec)) {
    std::string missing;
    for (const std::string& f : {npy_path, json_path})
      if (!fs::exists(f, ec)) missing += (missing.empty() ? "" : " and ") + fs::path(f).filename().string();
    bool extension = false;  // poslab extend's (model.extended_from set), not another checkpoint of that name
    try {
      extension = config_from_yaml(read_checkpoint_meta(out).config_yaml, out).model.extended_from > 0;
    } catch (const Error&) {  // unreadable: check_output_file below names it
    }
    if (!missing.empty() && extension)
      throw Error(named + " " + out + ": already exists, without " + missing +
                      " beside it: an extension that stopped before it was whole",
                  "pass --force to write it again");
  }
  for (const std::string& f : {out, npy_path, json_path})
    check_output_file(f, f == out ? named : named + "'s table or record beside it,", req.force, {req.checkpoint});
  check_analysis_fits(req.to, C,
                      "--to " + std::to_string(req.to) + ": the extended table (" + grouped(req.to) + " positions x " +
                          std::to_string(C) + " dims)",
                      "extend to fewer positions (a smaller --to); nothing was written", memory_room());

  const torch::Tensor before = m.model->position_table().detach();
  const uint64_t seed = static_cast<uint64_t>(req.seed >= 0 ? req.seed : m.cfg.run.seed);
  const torch::Tensor after = extend_table(before, req.to, req.method, m.cfg.model.wpe_init_std, seed);
  // Both tables analysed before anything is written: an analysis that fails leaves no partial extension.
  const Analysis a_before = analyze_table(before, req.checkpoint + " wpe.weight");
  const Analysis a_after = analyze_table(after, out + " wpe.weight");

  GPT model(cfg.model, m.tokenizer.vocab_size());
  {
    torch::NoGradGuard no_grad;
    const auto old_params = m.model->named_parameters();
    for (auto& p : model->named_parameters()) {
      if (p.key() == "wpe.weight")
        p.value().copy_(after);
      else
        p.value().copy_(old_params[p.key()]);  // same shapes: only the table depends on block_size
    }
  }
  CheckpointMeta meta = m.meta;
  meta.config_yaml = to_yaml(cfg);
  meta.train_loss = meta.val_loss = NAN;  // measured at T positions; `poslab eval` measures the new model
  meta.best_val_loss = INFINITY;
  if (const fs::path folder = fs::path(out).parent_path(); !folder.empty()) make_dirs(folder.string());  // "x.pt": here
  remove_dead_temporaries(fs::path(out).parent_path().empty() ? "." : fs::path(out).parent_path().string(),
                          {fs::path(out).filename().string(), fs::path(npy_path).filename().string(),
                           fs::path(json_path).filename().string()});  // what a killed extension of these left
  save_checkpoint(out, model, nullptr, meta);

  const torch::Tensor table = after.to(torch::kCPU, torch::kFloat32).contiguous();  // (to, n_embd)
  write_file_atomic(npy_path, npy_bytes(table.data_ptr<float>(), table.size(0), table.size(1)));

  ExtensionInfo info;
  info.source = fs::absolute(req.checkpoint).lexically_normal().string();
  info.source_step = m.meta.step;
  info.from = T;
  info.to = req.to;
  info.method = req.method;
  info.seed = seed;
  info.checkpoint = fs::absolute(out).lexically_normal().string();
  info.table = fs::absolute(npy_path).lexically_normal().string();
  info.run_name = cfg.run.name;
  info.table_before = metrics_json(a_before);
  info.table_after = metrics_json(a_after);
  write_file_atomic(json_path, json_text(to_json(info), 2) + "\n");

  ExtendResult r;
  r.checkpoint = out;
  r.extension_json = json_path;
  r.table_npy = npy_path;
  r.from = T;
  r.to = req.to;
  // Each line's numbers start in one column, where a line too long for the terminal continues (util/wrap.h).
  auto line = [&](const char* what, const Analysis& a) {
    return fmt::format(
        "{:<7} {} rows | eff rank {:.2f} | adjacent cos {:.3f} | interpolation error (4th row) {} | "
        "probe R² {:.3f}\n",
        what, a.positions, a.effective_rank, a.smooth.adjacent_cosine,
        a.reconstruction.size() > 1 ? fmt::format("{:.3f}", a.reconstruction[1].error) : "-", a.probe.r2);
  };
  r.summary = fmt::format("extended {} (step {}) from {} to {} positions by {}\n", req.checkpoint, m.meta.step, T,
                          req.to, req.method) +
              line("before", a_before) + line("after", a_after);
  return r;
}

}  // namespace poslab
