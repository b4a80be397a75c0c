// The table of config keys: for each dotted key, how to read its YAML value into a Config and write it back. One
// row per member of the structs in config.h, in section order. Internal to src/config.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"

namespace poslab {

// One config key: how to read it from YAML into the struct and write it back.
struct ConfigField {
  std::string key;     // "section.key" (or "data.tokenizer.type")
  std::string type;    // for messages: "int", "float", "bool", "string", "list of strings", ...
  std::string least;   // an integer key's type's bounds ("-2147483648", "2147483647"), for a whole number past them;
  std::string most;    // else ""
  bool whole = false;  // an integer key (or "auto" or one): 010 is refused, which yaml-cpp would read as 8
  bool null_is_empty = false;  // a text key whose default is "" (none): `key:` or `key: null` is that default
  bool real = false;           // a floating-point key: a value below a double's least (1e-400) is refused, not 0
  std::function<void(Config&, const YAML::Node&)> set;  // throws a YAML::Exception for a value of the wrong type
  std::function<void(const Config&, YAML::Emitter&)> emit;
};

// Every key, in section order (the order of to_yaml and config_keys).
const std::vector<ConfigField>& config_fields();

// The field of a dotted key; nullptr when there is none.
const ConfigField* find_config_field(const std::string& key);

// Some key starts with `prefix` + "." ("model", "data.tokenizer").
bool is_config_section(const std::string& prefix);

}  // namespace poslab
