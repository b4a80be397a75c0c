// libFuzzer target: the .npy reader. Any input must give a table or a poslab::Error, never a crash.
#include <cstdint>
#include <string>

#include "formats/npy.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    poslab::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  } catch (const poslab::Error&) {
  }
  return 0;
}
