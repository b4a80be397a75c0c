// Rendering figures with gnuplot (Debian's gnuplot-nox): poslab writes data and script files, gnuplot draws.
#pragma once

#include <string>

namespace poslab {

// Full path of the gnuplot executable: $POSLAB_GNUPLOT if set (an empty value means "none"), else the first
// gnuplot on PATH. Returns "" when there is none.
std::string find_gnuplot();

// Runs `gnuplot SCRIPT` in `dir`, the figures (both_formats's) written to temporary files and each committed (synced,
// renamed) once gnuplot is done: a crash or a failure leaves the figures before it whole. Throws poslab::Error naming
// the script, with gnuplot's own message, when gnuplot is missing or fails.
void run_gnuplot(const std::string& dir, const std::string& script);

}  // namespace poslab
