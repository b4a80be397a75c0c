#include "train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>

#include <filesystem>

#include "config/config.h"
#include "util/error.h"
#include "util/fs.h"

namespace poslab {
namespace {

torch::Tensor to_tensor(const std::string& s) {
  return torch::from_blob(const_cast<char*>(s.data()), {static_cast<int64_t>(s.size())}, torch::kUInt8).clone();
}

std::string to_string(const torch::Tensor& t) {
  auto c = t.contiguous().to(torch::kCPU);
  return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), static_cast<size_t>(c.numel()));
}

torch::Tensor read_tensor(torch::serialize::InputArchive& ar, const std::string& key, const std::string& path) {
  torch::Tensor t;
  if (!ar.try_read(key, t))
    throw Error(path + ": checkpoint has no '" + key + "' entry", "the file is not a complete poslab checkpoint");
  return t;
}

void load_archive(torch::serialize::InputArchive& ar, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(path + ": checkpoint not found", "pass RUN_DIR/checkpoints/latest.pt or best.pt of a poslab run");
  try {
    ar.load_from(path);
  } catch (const c10::Error& e) {
    throw Error(path + ": not a readable checkpoint (damaged, truncated or another format)",
                "use another checkpoint of the run, e.g. best.pt");
  }
}

CheckpointMeta read_meta(torch::serialize::InputArchive& ar, const std::string& path) {
  CheckpointMeta m;
  torch::Tensor fmt;
  if (!ar.try_read("poslab_format", fmt))
    throw Error(path + ": not a poslab checkpoint (no 'poslab_format' entry)", "pass a checkpoint written by poslab train");
  m.format_version = fmt.item<int64_t>();
  if (m.format_version != kCheckpointFormat)
    throw Error(path + ": checkpoint format " + std::to_string(m.format_version) + ", this poslab reads format " +
                std::to_string(kCheckpointFormat), "use the poslab version that wrote it");
  m.step = read_tensor(ar, "step", path).item<int64_t>();
  auto losses = read_tensor(ar, "losses", path);  // (3,) train, val, best val
  m.train_loss = losses[0].item<double>();
  m.val_loss = losses[1].item<double>();
  m.best_val_loss = losses[2].item<double>();
  m.config_yaml = to_string(read_tensor(ar, "config_yaml", path));
  m.tokenizer_model = to_string(read_tensor(ar, "tokenizer_model", path));
  m.sampler_state = to_string(read_tensor(ar, "sampler_state", path));
  m.torch_rng_state = read_tensor(ar, "torch_rng_state", path);
  return m;
}

}  // namespace

void save_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer* optimizer,
                     const CheckpointMeta& meta) {
  torch::serialize::OutputArchive ar;
  ar.write("poslab_format", torch::tensor(kCheckpointFormat));
  ar.write("step", torch::tensor(meta.step));
  ar.write("losses", torch::tensor({meta.train_loss, meta.val_loss, meta.best_val_loss}, torch::kFloat64));
  ar.write("config_yaml", to_tensor(meta.config_yaml));
  ar.write("tokenizer_model", to_tensor(meta.tokenizer_model));
  ar.write("sampler_state", to_tensor(meta.sampler_state));
  ar.write("torch_rng_state", meta.torch_rng_state.defined() ? meta.torch_rng_state : torch::empty({0}, torch::kUInt8));
  torch::serialize::OutputArchive model_ar;
  model->save(model_ar);
  ar.write("model", model_ar);
  if (optimizer != nullptr) {
    torch::serialize::OutputArchive opt_ar;
    optimizer->save(opt_ar);
    ar.write("optimizer", opt_ar);
  }
  const std::string tmp = path + ".tmp";
  try {
    ar.save_to(tmp);
  } catch (const c10::Error& e) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw Error(path + ": cannot write checkpoint: " + e.what_without_backtrace(),
                "check free space and permissions; the previous checkpoint is intact");
  }
  commit_file(tmp, path);
}

CheckpointMeta read_checkpoint_meta(const std::string& path) {
  torch::serialize::InputArchive ar;
  load_archive(ar, path);
  return read_meta(ar, path);
}

CheckpointMeta load_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer* optimizer) {
  torch::serialize::InputArchive ar;
  load_archive(ar, path);
  CheckpointMeta meta = read_meta(ar, path);
  const Config stored = config_from_yaml(meta.config_yaml, path + " (stored config)");
  const ModelConfig& a = stored.model;
  const ModelConfig& b = model->cfg;
  std::string diff;
  auto cmp = [&](const char* key, auto x, auto y) {
    if (x != y) diff += std::string(diff.empty() ? "" : ", ") + key + " " + std::to_string(x) + " in the checkpoint vs " + std::to_string(y);
  };
  cmp("model.n_layer", a.n_layer, b.n_layer);
  cmp("model.n_head", a.n_head, b.n_head);
  cmp("model.n_embd", a.n_embd, b.n_embd);
  cmp("model.block_size", a.block_size, b.block_size);
  cmp("model.bias", a.bias, b.bias);
  if (a.position != b.position)
    diff += std::string(diff.empty() ? "" : ", ") + "model.position " + a.position + " in the checkpoint vs " + b.position;
  if (!diff.empty())
    throw Error(path + ": checkpoint architecture differs from the requested model: " + diff,
                "use the checkpoint's own config (poslab train --resume RUN_DIR) or a matching config");
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  for (const auto& p : model->named_parameters()) shapes.emplace_back(p.key(), p.value().sizes().vec());
  try {
    torch::serialize::InputArchive model_ar;
    ar.read("model", model_ar);
    model->load(model_ar);
    // InputArchive::read replaces tensors without checking shapes: compare them ourselves.
    const auto params = model->named_parameters();
    for (const auto& [name, shape] : shapes) {
      if (params[name].sizes().vec() != shape)
        throw Error(path + ": parameter " + name + " has shape " + c10::str(params[name].sizes()) +
                        " in the checkpoint, the model expects " + c10::str(c10::IntArrayRef(shape)),
                    "the checkpoint was trained with another vocabulary or architecture: use its own config");
    }
    if (optimizer != nullptr) {
      torch::serialize::InputArchive opt_ar;
      ar.read("optimizer", opt_ar);
      optimizer->load(opt_ar);
    }
  } catch (const c10::Error& e) {
    throw Error(path + ": cannot load weights: " + e.what_without_backtrace(),
                "the checkpoint does not match this model (vocabulary size?) or is damaged");
  }
  return meta;
}

}  // namespace poslab
