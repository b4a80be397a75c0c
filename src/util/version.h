// Which poslab this is: the version in CMakeLists.txt's project() and the git commit it was built from.
#pragma once

#include <string>

namespace poslab {

// "0.1.0" (CMakeLists.txt's project(... VERSION)).
std::string poslab_version_number();

// The commit the build's sources were at, 12 hex digits; "" when they were not a git checkout, "unknown" when git
// could not read it.
std::string poslab_commit();

// One line for --version, logs and results: "poslab 0.1.0 (commit 381c05e1a2b3)", "... (commit 381c05e1a2b3 with
// uncommitted changes)", "poslab 0.1.0 (not built from a git checkout)", "poslab 0.1.0 (commit unknown: …)".
std::string poslab_version();

}  // namespace poslab
