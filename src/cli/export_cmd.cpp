#include "cli/export_cmd.h"

#include <spdlog/fmt/fmt.h>

#include <filesystem>
#include <iostream>

#include "app/export_hf.h"
#include "util/error.h"

namespace poslab {
namespace fs = std::filesystem;

CLI::App* add_export_command(CLI::App& app, ExportArgs& a) {
  auto* cmd = app.add_subcommand("export", "write a checkpoint as a Hugging Face transformers folder (GPT-2 layout, "
                                           "tokenizer, a logits check)");
  cmd->add_option("checkpoint", a.input, "RUN_DIR/checkpoints/latest.pt or best.pt")->required()->check(CLI::ExistingFile);
  cmd->add_option("--to", a.to, "hf: a folder GPT2LMHeadModel.from_pretrained loads")
      ->capture_default_str()->check(CLI::IsMember({"hf"}));
  cmd->add_option("--out", a.out, "the folder to write (default: RUN_DIR/export/hf)");
  return cmd;
}

int run_export(const ExportArgs& a) {
  std::string out = a.out;
  if (out.empty()) {
    const fs::path ckpt(a.input);
    const fs::path run = ckpt.parent_path().filename() == "checkpoints" ? ckpt.parent_path().parent_path() : ckpt.parent_path();
    out = (run / "export" / a.to).string();
  }
  const HfExport r = export_hf(a.input, out);
  std::cerr << fmt::format("wrote {} files; check them in transformers with:\n  python3 scripts/check_hf_export.py {}\n",
                           r.files.size(), r.dir);
  std::cout << r.dir << "\n";
  return 0;
}

}  // namespace poslab
