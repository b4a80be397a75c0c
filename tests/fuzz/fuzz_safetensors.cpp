// libFuzzer target: the .safetensors parser. Any input must give entries inside the file or a poslab::Error.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "formats/safetensors.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto e = poslab::find_safetensors_entry(bytes, "wpe.weight", "fuzz.safetensors");
    if (e.offset + e.bytes > bytes.size()) std::abort();  // an entry must lie inside the file
  } catch (const poslab::Error&) {
  }
  try {  // every tensor of the header, as a model folder lists them
    for (const auto& [name, e] : poslab::list_safetensors_entries(bytes, "fuzz.safetensors"))
      if (e.offset + e.bytes > bytes.size()) std::abort();
  } catch (const poslab::Error&) {
  }
  return 0;
}
