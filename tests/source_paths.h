// Where the tests find the repository's files and the poslab program. Defined in source_paths.cpp, the one test file
// that sees the build's absolute paths: every other test compiles to the same object in any clone (ccache reuses it).
#pragma once

#include <string>

namespace poslab::test {

// The repository's root folder (fixtures under tests/fixtures, configs under configs/).
const std::string& source_dir();
// The poslab program of this build.
const std::string& poslab_binary();

}  // namespace poslab::test
