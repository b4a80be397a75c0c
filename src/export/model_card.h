// The model card of an exported model: README.md in the folder, with Hugging Face's metadata block (library,
// pipeline, tags, the corpus by name) and what the model is: its shape, how it was trained (steps, tokens seen,
// losses), its position variant, its table's verdict with the numbers behind it and the figures of the run's report.
// Read by huggingface_hub's ModelCard (scripts/check_hf_export.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "load/loaded_model.h"

namespace poslab {

// The report figures a card can show, in its order: the file's stem ("similarity" is similarity.png) and caption.
struct CardFigure {
  const char* stem;
  const char* caption;
};
inline constexpr CardFigure kCardFigures[] = {
    {"similarity", "Cosine similarity between positions' rows, at the first and last snapshot"},
    {"trajectory", "How the table's structure emerged during training"}};

struct ModelCard {
  std::string text;                  // README.md
  std::vector<std::string> figures;  // report figures the card shows, to copy beside it (paths in the run's report/)
};

// `checkpoint` is the file exported, `dir` the folder it goes to (named in the card's example); the checkpoint's run
// folder (RunFolder::of_checkpoint), when it holds snapshots, gives the verdict, and its report the figures.
// `exported_parameters` counts the exported tensors, GPT-2's layout, which holds zero biases for a model without
// them and a table of zeros for one without a table: the card names both counts where they differ.
ModelCard model_card(const LoadedModel& m, const std::string& checkpoint, const std::string& dir,
                     int64_t exported_parameters);

}  // namespace poslab
