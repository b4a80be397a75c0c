// The run report's section on extended contexts (poslab extend, poslab train --init-from).
#pragma once

#include <string>
#include <vector>

#include "report/figures.h"

namespace poslab {

struct ExtensionSection {
  std::string html;  // empty when the run has nothing to show
  std::vector<Figure> figures;
};

// For a run folder:
// - its extensions (RUN_DIR/extend/*/checkpoint.extension.json): each method's loss by position from its
//   `poslab eval` (RUN_DIR/extend/N-METHOD/eval/per_position_loss_val.csv) against the run's own
//   (RUN_DIR/eval/per_position_loss_val.csv), the runs beside this one that fine-tuned an extension
//   (train.init_from) with the steps they took to reach this run's final val loss, and the extended tables'
//   metrics and similarity;
// - when the run itself started from an extension: its loss by position before and after.
ExtensionSection extension_section(const std::string& run_dir);

}  // namespace poslab
