// libFuzzer target: the YAML config reader. Any text must give a valid config or a poslab::Error.
#include <cstdint>
#include <string>

#include "config/config.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    poslab::config_from_yaml(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  } catch (const poslab::Error&) {
  }
  return 0;
}
