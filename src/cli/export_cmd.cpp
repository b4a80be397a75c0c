#include "cli/export_cmd.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "cli/validators.h"
#include "config/config.h"
#include "export/export_hf.h"
#include "export/export_tensorboard.h"
#include "run/run_folder.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/output_paths.h"
#include "util/plural.h"
#include "util/shell.h"
#include "util/wrap.h"

namespace poslab {
namespace fs = std::filesystem;

CLI::App* add_export_command(CLI::App& app, ExportArgs& a) {
  auto* cmd = app.add_subcommand("export", "a run for transformers or TensorBoard");
  cmd->footer(
      "--to hf: a Hugging Face transformers folder (GPT-2 layout, tokenizer, a logits check); --to tensorboard: "
      "TensorBoard's event and projector files (docs/interop.md).");
  cmd->add_option("input", a.input, "a checkpoint (RUN_DIR/checkpoints/latest.pt) or a run folder (its latest.pt)")
      ->required()
      ->check(existing("path"));
  cmd->add_option("--to", a.to,
                  "hf: a folder GPT2LMHeadModel.from_pretrained loads | tensorboard: tensorboard --logdir DIR")
      ->capture_default_str()
      ->check(CLI::IsMember({"hf", "tensorboard"}));
  cmd->add_option("--out", a.out, "the folder to write (default: RUN_DIR/export/hf or RUN_DIR/export/tensorboard)")
      ->type_name("DIR")
      ->check(kNotAnOption);
  cmd->add_flag("--force", a.force,
                "write into an --out that already holds files, replacing those of the same name (the default folder "
                "needs none)");
  return cmd;
}

namespace {

// The Python of the pip build's environment (scripts/libtorch.sh: $POSLAB_CACHE or ~/.cache/poslab, torch-VERSION/,
// with torch, transformers and transformer-lens) when there is one; "PYTHON" where there is none.
std::string interop_python() {
  const char* cache = std::getenv("POSLAB_CACHE");
  const char* home = std::getenv("HOME");
  const fs::path dir = cache != nullptr && *cache != '\0' ? fs::path(cache)
                       : home != nullptr                  ? fs::path(home) / ".cache/poslab"
                                                          : fs::path();
  // Of several, the newest torch: its version's numbers compared as numbers (2.11.0 after 2.9.0).
  const auto version = [](const std::string& name) {
    std::vector<long> parts;
    for (size_t at = name.find_first_of("0123456789"); at != std::string::npos;
         at = name.find_first_of("0123456789", at)) {
      size_t used = 0;
      parts.push_back(std::stol(name.substr(at), &used));
      at += used;
    }
    return parts;
  };
  std::error_code ec;
  fs::path found;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("torch-", 0) != 0 || !fs::exists(e.path() / ".complete", ec) ||
        !fs::exists(e.path() / "bin/python", ec))
      continue;
    if (found.empty() || version(name) > version(found.filename().string())) found = e.path();
  }
  return found.empty() ? "PYTHON" : shell_word((found / "bin/python").string());
}

// The corpus of the run being exported (data.corpus): of the checkpoint's config, else of the run's config.yaml;
// none where neither reads (the export then says why).
std::vector<std::string> corpus_of(const std::string& checkpoint, const std::string& config) {
  try {
    std::error_code ec;
    if (fs::is_regular_file(checkpoint, ec))
      return config_from_yaml(read_checkpoint_meta(checkpoint).config_yaml, checkpoint).data.corpus;
    if (fs::is_regular_file(config, ec)) return load_config(config).data.corpus;
  } catch (const Error&) {
  }
  return {};
}

}  // namespace

int run_export(const ExportArgs& a) {
  // The run folder and the checkpoint, from either.
  // Its real place, however it is spelled (latest.pt from inside checkpoints/, a link): the run is found from it.
  std::error_code ec0;
  const fs::path in = fs::weakly_canonical(fs::absolute(a.input, ec0), ec0);
  const bool is_dir = fs::is_directory(in);
  // The run whose record holds it (latest.pt in checkpoints/, the checkpoints/ folder itself), else its folder.
  const std::string record = run_record_of(is_dir ? in.string() : in.parent_path().string());
  const fs::path run = !record.empty() ? fs::path(record) : is_dir ? in : in.parent_path();
  const std::string default_out = (run / "export" / a.to).string();
  const std::string out = a.out.empty() ? default_out : a.out;
  // An --out that holds anything (another export, the user's files) is written into only with --force: an export
  // replaces files by name and would mix with what is there. The default folder (RUN_DIR/export/hf or /tensorboard)
  // holds only the run's earlier export, which a new one replaces.
  std::error_code ec;
  // A folder without a checkpoint goes as it is: the reader says what it lacks.
  const std::string checkpoint = is_dir && fs::is_regular_file(RunFolder(run.string()).latest_checkpoint(), ec)
                                     ? RunFolder(run.string()).latest_checkpoint()
                                     : a.input;
  check_output_folder(out, a.out.empty() ? "the export folder" : "--out", a.force || a.out.empty(), default_out,
                      corpus_of(checkpoint, RunFolder(run.string()).config()));
  if (a.to == "tensorboard") {
    // A checkpoint outside a run's folder (an extension's, one copied elsewhere) has no log or snapshots to show.
    std::error_code ec;
    if (!fs::is_regular_file(RunFolder(run.string()).metrics(), ec))
      throw Error(a.input + ": no run's log beside it (" + RunFolder(run.string()).metrics() +
                      "): --to tensorboard exports a run's curves and snapshots",
                  "export the run folder it came from (poslab export RUN_DIR --to tensorboard), or this checkpoint "
                  "--to hf");
    const TensorboardExport r = export_tensorboard(run.string(), out);
    std::cerr << fmt::format("wrote {} and {}; look at them with:\n  tensorboard --logdir {}\n",
                             counted(r.scalars, "scalar"), counted(r.snapshots, "snapshot table"), shell_word(r.dir));
    std::cout << r.dir << "\n";
    return 0;
  }
  const HfExport r = export_hf(checkpoint, out);
  for (const std::string& w : r.warnings) spdlog::warn("{}", w);
  const std::string python = interop_python();
  // The words at the terminal's width; the commands each on one line, to paste.
  std::cerr << wrap_text(fmt::format("wrote {} files: transformers loads them with GPT2LMHeadModel.from_pretrained "
                                     "(docs/interop.md). To check them against poslab's own logits in transformers "
                                     "and TransformerLens, from poslab's source folder{}:",
                                     r.files.size(),
                                     python == "PYTHON" ? " with a Python that has torch, transformers and "
                                                          "transformer-lens (bash scripts/libtorch.sh pip makes one "
                                                          "in ~/.cache/poslab)"
                                                        : ""),
                         terminal_width(STDERR_FILENO))
            << fmt::format("\n  {} scripts/check_hf_export.py {}\n  {} scripts/check_tl_export.py {}\n", python,
                           shell_word(r.dir), python, shell_word(r.dir));
  std::cout << r.dir << "\n";
  return 0;
}

}  // namespace poslab
