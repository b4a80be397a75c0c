// A Hugging Face model folder as transformers' save_pretrained writes it: config.json and the weights in
// .safetensors files (one, or shards listed by model.safetensors.index.json). Only the headers are read here: the
// names, dtypes, shapes and places of every tensor. No LibTorch, so the readers can be fuzzed (tests/fuzz/).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "formats/safetensors.h"

namespace poslab {

struct WeightTensor {
  std::string file;        // the .safetensors file that holds it
  SafetensorsEntry entry;  // dtype, shape, bytes in that file
};

struct ModelFolder {
  std::string path;         // as given: a folder, or one .safetensors file
  std::string config_path;  // "" when there is no config.json
  nlohmann::json config = nlohmann::json::object();
  std::vector<std::string> files;  // the .safetensors files read, in order
  std::map<std::string, WeightTensor> tensors;
};

// Whether a folder holds a model's weights or config (config.json, *.safetensors, *.bin) rather than a poslab run.
bool is_model_folder(const std::string& dir);

// Reads the config and every weight file's header. Throws poslab::Error naming the file: no weights in the folder,
// PyTorch pickles only (with the command that converts them), a malformed config.json or index, an index that
// names a missing shard or a tensor its shard lacks, a truncated or malformed .safetensors file.
ModelFolder open_model_folder(const std::string& path);

// config.json's text -> its JSON object. Throws poslab::Error naming `path` when it is not a JSON object.
nlohmann::json parse_model_config(const std::string& text, const std::string& path);

// model.safetensors.index.json's text -> tensor name -> shard file name (a plain file name in the same folder).
// Throws poslab::Error naming `path`: not JSON, no "weight_map" object, a value that is not a file name there.
std::map<std::string, std::string> parse_safetensors_index(const std::string& text, const std::string& path);

}  // namespace poslab
