#include "hf/model_folder.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "util/error.h"
#include "util/fs.h"
#include "util/json_text.h"

namespace poslab {
namespace fs = std::filesystem;

namespace {

const char* kIndex = "model.safetensors.index.json";

// The header of one .safetensors file, read without its data.
std::map<std::string, SafetensorsEntry> read_header(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw Error(path + ": cannot read: " + ec.message(), "check the path and its permissions");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open", "check the path and its permissions");
  std::string first8(8, '\0');
  in.read(first8.data(), 8);
  first8.resize(static_cast<size_t>(in.gcount()));
  const uint64_t n = safetensors_header_length(first8, size, path);
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  if (static_cast<uint64_t>(in.gcount()) != n)
    throw Error(path + ": truncated safetensors file", "download the file again");
  return parse_safetensors_header(header, size, path);
}

void add_file(ModelFolder& m, const std::string& file) {
  m.files.push_back(file);
  for (auto& [name, e] : read_header(file)) m.tensors[name] = WeightTensor{file, e};
}

std::string pickle_hint(const std::string& dir, const std::string& bin) {
  return "poslab reads .safetensors only; convert with the PyTorch that wrote it: python3 -c \"import torch; "
         "from safetensors.torch import save_file; sd = torch.load('" +
         (fs::path(dir) / bin).string() +
         "', map_location='cpu', weights_only=True); save_file({k: v.contiguous().clone() for k, v in sd.items()}, '" +
         (fs::path(dir) / "model.safetensors").string() + "')\"";
}

}  // namespace

nlohmann::json parse_model_config(const std::string& text, const std::string& path) {
  nlohmann::json j;
  if (const std::string why = json_object_error(text, j); !why.empty())
    throw Error(path + ": " + why, "config.json is written by transformers' save_pretrained; download it again");
  return j;
}

std::map<std::string, std::string> parse_safetensors_index(const std::string& text, const std::string& path) {
  const std::string hint = "the index is written by transformers' save_pretrained; download it again";
  nlohmann::json j;
  if (const std::string why = json_object_error(text, j); !why.empty()) throw Error(path + ": " + why, hint);
  if (!j.contains("weight_map") || !j["weight_map"].is_object()) throw Error(path + ": no \"weight_map\" object", hint);
  std::map<std::string, std::string> out;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) throw Error(path + ": weight_map['" + name + "'] is not a file name", hint);
    const std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
      throw Error(path + ": weight_map['" + name + "'] = '" + f + "' is not a file name in the model's folder", hint);
    out[name] = f;
  }
  if (out.empty()) throw Error(path + ": the weight_map is empty", hint);
  return out;
}

bool is_model_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  if (fs::exists(fs::path(dir) / "config.json", ec)) return true;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    const std::string ext = f.path().extension().string();
    if (ext == ".safetensors" || ext == ".bin") return true;
  }
  return false;
}

ModelFolder open_model_folder(const std::string& path) {
  ModelFolder m;
  m.path = path;
  std::error_code ec;
  const bool dir = fs::is_directory(path, ec);
  if (!dir && !fs::exists(path, ec)) throw Error(path + ": not found", "pass a model folder or a .safetensors file");
  const fs::path folder = dir ? fs::path(path) : fs::path(path).parent_path();
  const fs::path config = folder / "config.json";
  if (fs::is_directory(config, ec))
    throw Error(config.string() + ": is a folder, not the model's config file",
                "put the model's config.json there (transformers' save_pretrained writes it)");
  if (fs::exists(config, ec)) {
    m.config_path = config.string();
    m.config = parse_model_config(read_file(m.config_path), m.config_path);
  }
  if (!dir) {
    add_file(m, path);
    return m;
  }
  const fs::path index = folder / kIndex;
  if (fs::exists(index, ec)) {
    const auto weight_map = parse_safetensors_index(read_file(index.string()), index.string());
    std::set<std::string> shards;
    for (const auto& [name, file] : weight_map) shards.insert(file);
    for (const std::string& s : shards) {
      const fs::path shard = folder / s;
      if (!fs::exists(shard, ec))
        throw Error(index.string() + " names the shard " + s + ", which is not in " + folder.string(),
                    "download the missing shard (every file the index names) again");
      add_file(m, shard.string());
    }
    for (const auto& [name, file] : weight_map) {
      const auto it = m.tensors.find(name);
      if (it == m.tensors.end() || fs::path(it->second.file).filename() != file)
        throw Error(index.string() + ": tensor '" + name + "' is not in its shard " + file,
                    "download the model's files again: the index and its shards disagree");
    }
    return m;
  }
  std::vector<std::string> safetensors, pickles;
  for (const auto& f : fs::directory_iterator(folder, ec)) {
    const std::string ext = f.path().extension().string();
    // poslab_check.safetensors, beside the weights of poslab's own export, holds its check's ids and logits
    if (ext == ".safetensors" && f.path().filename() != "poslab_check.safetensors")
      safetensors.push_back(f.path().string());
    if (ext == ".bin" || ext == ".pth") pickles.push_back(f.path().filename().string());
  }
  std::sort(safetensors.begin(), safetensors.end());
  std::sort(pickles.begin(), pickles.end());
  if (safetensors.empty() && !pickles.empty())
    throw Error(
        path + ": PyTorch pickles only (" + pickles.front() + (pickles.size() > 1 ? ", …" : "") + "), no .safetensors",
        pickle_hint(path, pickles.front()));
  if (safetensors.empty())
    throw Error(path + ": no model weights (no .safetensors file, no " + kIndex + ")",
                "pass a Hugging Face model folder (config.json and model.safetensors) or a poslab run folder");
  for (const std::string& f : safetensors) add_file(m, f);
  return m;
}

}  // namespace poslab
