// The end of a run in the terminal: the last lines of poslab train and of poslab analyze RUN_DIR, short enough to
// read at a glance over ssh, where the report's page is out of reach.
#pragma once

#include <string>
#include <vector>

#include "analysis/trajectory.h"

namespace poslab {

// The verdict sentence; the headline numbers (components above the noise floor, their share of the variance, the
// adjacent cosine's z against shuffled copies) at the first, the emergence and the last snapshots, each with a
// sparkline over every snapshot when `unicode`; layer 0's head kinds at the last snapshot (on position alone, and on
// validation text where the run measured it); and the report and watch page when they exist.
std::string run_ending_text(const std::string& run_dir, const std::vector<TrajectoryPoint>& points, const Verdict& v,
                            bool unicode);

// The same for a run folder, its snapshots analysed (default verdict thresholds); "" when it has no snapshot or
// its analysis fails (logged: the end of a run never fails the run).
std::string run_ending_of(const std::string& run_dir);

// A sparkline of `values` scaled from `lo` to `hi` (eight block heights), e.g. "▁▁▂▄▆▇██".
std::string sparkline(const std::vector<double>& values, double lo, double hi);

// Whether the terminal's locale takes UTF-8 (LC_ALL, else LC_CTYPE, else LANG names UTF-8).
bool terminal_takes_unicode();

}  // namespace poslab
