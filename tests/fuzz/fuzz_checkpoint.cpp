// libFuzzer target: the checkpoint reader. Any input must load or give a poslab::Error, never a crash, an
// uncaught LibTorch error or a model that fails on its first forward pass.
//
// Most raw mutations of a checkpoint (a zip archive with CRC-checked records) die in the zip reader, so the
// target has two modes, chosen by the first byte:
//   raw:        the remaining bytes are the checkpoint file;
//   structured: a valid checkpoint of a tiny model is rebuilt with fuzz-chosen damage before it is written —
//               metadata entries replaced by tensors of another dtype / shape or left out, parameters and
//               optimizer moments of the wrong dtype or shape, the stored config's text altered — so the
//               reader's own checks are what gets exercised.
#include <fuzzer/FuzzedDataProvider.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "config/config.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "util/error.h"

namespace {

constexpr int64_t kVocab = 11;

poslab::Config tiny_config() {
  poslab::Config cfg;
  cfg.model.n_layer = 1;
  cfg.model.n_head = 2;
  cfg.model.n_embd = 8;
  cfg.model.block_size = 8;
  return cfg;
}

std::string path_for_this_process() {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/poslab-fuzz-checkpoint-" + std::to_string(::getpid()) + ".pt";
}

torch::Tensor fuzzed_tensor(FuzzedDataProvider& in) {
  static const torch::ScalarType kTypes[] = {torch::kUInt8, torch::kInt64,    torch::kFloat32, torch::kFloat64,
                                             torch::kBool,  torch::kBFloat16, torch::kInt32};
  const auto type = kTypes[in.ConsumeIntegralInRange<int>(0, 6)];
  std::vector<int64_t> shape(in.ConsumeIntegralInRange<int>(0, 3));
  for (auto& d : shape) d = in.ConsumeIntegralInRange<int64_t>(0, 9);
  torch::Tensor t = torch::zeros(shape, torch::TensorOptions().dtype(type));
  const std::vector<uint8_t> bytes = in.ConsumeBytes<uint8_t>(t.nbytes());
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  if (type == torch::kBool) t = t.ne(0);  // a bool must be 0 or 1
  return t;
}

void write_structured(FuzzedDataProvider& in, const std::string& path) {
  torch::manual_seed(0);
  const poslab::Config cfg = tiny_config();
  poslab::GPT model(cfg.model, kVocab);
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
  model->forward(torch::zeros({1, 4}, torch::kLong)).sum().backward();
  opt.step();

  const int damage = in.ConsumeIntegralInRange<int>(0, 3);
  for (int i = 0; i < damage; ++i) {
    auto params = model->parameters();
    const size_t which = in.ConsumeIntegralInRange<size_t>(0, params.size() - 1);
    torch::NoGradGuard no_grad;
    if (in.ConsumeBool()) {
      params[which].set_data(fuzzed_tensor(in));
    } else {
      auto& state = opt.state();
      auto it = state.find(poslab::optimizer_state_key(params[which]));
      if (it != state.end()) static_cast<torch::optim::AdamWParamState&>(*it->second).exp_avg(fuzzed_tensor(in));
    }
  }

  poslab::CheckpointMeta meta;
  meta.step = 1;
  meta.config_yaml = poslab::to_yaml(cfg);
  if (in.ConsumeBool()) {  // alter the stored config: overwrite a stretch of its text
    const size_t at = in.ConsumeIntegralInRange<size_t>(0, meta.config_yaml.size());
    meta.config_yaml.replace(at, in.ConsumeIntegralInRange<size_t>(0, 16), in.ConsumeRandomLengthString(32));
  }
  save_checkpoint(path, model, in.ConsumeBool() ? nullptr : &opt, meta);

  // Rewrite the metadata entries: some replaced by fuzzed tensors, some left out.
  static const char* kKeys[] = {"poslab_format",   "step",          "losses",         "config_yaml",
                                "tokenizer_model", "sampler_state", "torch_rng_state"};
  torch::serialize::InputArchive original;
  original.load_from(path);
  torch::serialize::OutputArchive ar;
  for (const char* key : kKeys) {
    torch::Tensor t;
    original.read(key, t);
    const int action = in.ConsumeIntegralInRange<int>(0, 5);  // 0-3 kept, 4 replaced, 5 left out
    if (action == 5) continue;
    ar.write(key, action == 4 ? fuzzed_tensor(in) : t);
  }
  torch::serialize::InputArchive sub;
  if (in.ConsumeIntegralInRange<int>(0, 7) != 7 && original.try_read("model", sub)) {
    // Re-saving a sub-archive is not possible, so the model entry is kept by re-saving the damaged model.
    torch::serialize::OutputArchive model_ar;
    model->save(model_ar);
    ar.write("model", model_ar);
  }
  if (original.try_read("optimizer", sub)) {
    torch::serialize::OutputArchive opt_ar;
    opt.save(opt_ar);
    ar.write("optimizer", opt_ar);
  }
  ar.save_to(path);
}

}  // namespace

// With POSLAB_FUZZ_SEED_DIR set, writes two seed inputs there first: an undamaged structured input and a raw one
// (a valid checkpoint of the tiny model behind the raw-mode byte).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("POSLAB_FUZZ_SEED_DIR");
  if (dir == nullptr) return 0;
  const std::string path = path_for_this_process();
  const std::vector<uint8_t> none(64, 0);
  FuzzedDataProvider in(none.data(), none.size());
  write_structured(in, path);
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::ofstream(std::string(dir) + "/raw.bin", std::ios::binary) << '\0' << bytes;
  std::ofstream(std::string(dir) + "/structured.bin", std::ios::binary) << '\1' << std::string(63, '\0');
  std::remove(path.c_str());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    std::atexit([] { std::remove(path_for_this_process().c_str()); });
    return path_for_this_process();
  }();
  torch::set_num_threads(1);
  FuzzedDataProvider in(data, size);
  const bool structured = in.ConsumeIntegral<uint8_t>() & 1;
  if (structured) {
    try {
      write_structured(in, path);
    } catch (const c10::Error&) {
      return 0;  // damage LibTorch will not even write (set_data refuses some types): not a reader input
    }
  } else {
    const std::vector<uint8_t> rest = in.ConsumeRemainingBytes<uint8_t>();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(rest.data()), rest.size());
  }
  try {
    poslab::read_checkpoint_meta(path);
    torch::manual_seed(1);
    poslab::GPT model(tiny_config().model, kVocab);
    torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
    poslab::load_checkpoint(path, model, &opt);
    // What loaded must work: a forward and backward pass and an optimizer step.
    model->forward(torch::zeros({1, 4}, torch::kLong)).sum().backward();
    opt.step();
  } catch (const poslab::Error&) {
  }
  return 0;
}
