#include "load/loaded_model.h"

#include <string>

#include "util/error.h"

namespace poslab {

LoadedModel load_model(const std::string& path, const torch::Device& device) {
  LoadedModel m;
  m.meta = read_checkpoint_meta(path);
  m.cfg = config_from_yaml(m.meta.config_yaml, path + " (stored config)");
  m.tokenizer = Tokenizer::from_bytes(m.meta.tokenizer_model, path + " (stored tokenizer)");
  m.model = GPT(m.cfg.model, m.tokenizer.vocab_size());
  load_checkpoint(path, m.model, nullptr);  // weights NaN or Inf refused there
  m.model->to(device);
  m.model->eval();
  return m;
}

GPT initial_model(const LoadedModel& m) {
  if (!m.cfg.train.init_from.empty()) return load_model(m.cfg.train.init_from).model;
  torch::manual_seed(static_cast<uint64_t>(m.cfg.run.seed));
  GPT model(m.cfg.model, m.tokenizer.vocab_size());
  model->eval();
  return model;
}

}  // namespace poslab
