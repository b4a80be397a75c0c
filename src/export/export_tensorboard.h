// A run in TensorBoard: its curves (losses, learning rate, throughput), the headline analysis metrics at each
// snapshot, and every snapshot's table for the projector (rows as points, the position as their label), so that
// `tensorboard --logdir DIR` shows the curves and the rows step by step. docs/interop.md.
#pragma once

#include <string>

namespace poslab {

struct TensorboardExport {
  std::string dir;
  std::string events_file;
  int scalars = 0;    // scalar events written
  int snapshots = 0;  // tables in the projector
};

// Writes DIR/events.out.tfevents.poslab (formats/tfevents.h), DIR/projector_config.pbtxt, DIR/positions.tsv and one
// DIR/wpe_stepNNNNNN.tsv per snapshot. Throws poslab::Error naming the run folder's damaged or missing file.
TensorboardExport export_tensorboard(const std::string& run_dir, const std::string& dir);

}  // namespace poslab
