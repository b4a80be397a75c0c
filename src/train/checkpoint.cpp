#include "train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "config/config.h"
#include "formats/zip_check.h"
#include "train/optim.h"
#include "util/cuda.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/plural.h"

namespace poslab {
namespace {

torch::Tensor to_tensor(const std::string& s) {
  return torch::from_blob(const_cast<char*>(s.data()), {static_cast<int64_t>(s.size())}, torch::kUInt8).clone();
}

std::string tensor_text(const torch::Tensor& t) {
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
  if (std::filesystem::is_directory(path, ec)) {
    // a run's checkpoints/ folder ("RUN/checkpoints", "checkpoints/", "." inside it): it holds checkpoints, it is
    // not the run folder that stands for one
    std::filesystem::path dir = std::filesystem::absolute(path, ec).lexically_normal();
    if (dir.filename().empty()) dir = dir.parent_path();
    const std::filesystem::path latest = std::filesystem::path(path) / "latest.pt",
                                best = std::filesystem::path(path) / "best.pt";
    const bool holds_latest = std::filesystem::is_regular_file(latest, ec);
    if (dir.filename() == "checkpoints" && (holds_latest || std::filesystem::is_regular_file(best, ec))) {
      std::string run = (std::filesystem::path(path) / "..").lexically_normal().string();
      if (run.size() > 1 && run.back() == '/') run.pop_back();
      throw Error(path + ": is a folder of checkpoints, not a checkpoint",
                  "pass one of them, e.g. " + (holds_latest ? latest : best).lexically_normal().string() +
                      (holds_latest ? ", or the run folder above it (" + (run.empty() ? "." : run) +
                                          "), which stands for its latest.pt"
                                    : ""));
    }
    throw Error(path +
                    ": is a folder, not a checkpoint (a run folder stands for its checkpoints/latest.pt, which this "
                    "one lacks)",
                "pass a run folder poslab train made (one that holds checkpoints/latest.pt), or a checkpoint: "
                "RUN_DIR/checkpoints/latest.pt or best.pt");
  }
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw Error(path + ": not a file (a device, pipe or socket), not a checkpoint",
                "pass RUN_DIR/checkpoints/latest.pt or best.pt of a poslab run");
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(path + ": checkpoint not found", "pass RUN_DIR/checkpoints/latest.pt or best.pt of a poslab run");
  if (::access(path.c_str(), R_OK) != 0) {
    const std::string why = std::strerror(errno);
    throw Error(path + ": cannot read the checkpoint: " + why, "check the file's permissions");
  }
  try {
    ar.load_from(path, torch::Device(torch::kCPU));  // every tensor to the CPU first: a GPU's checkpoint opens anywhere
  } catch (const c10::Error& e) {
    // A table or a model file given where a checkpoint goes is no damage: say what it is and which command reads it.
    std::ifstream in(path, std::ios::binary);
    char head[16] = {};
    in.read(head, sizeof head);
    const std::string start(head, static_cast<size_t>(in.gcount()));
    uint64_t header = 0;
    if (start.size() >= 9) std::memcpy(&header, start.data(), sizeof header);
    const std::string reads = "poslab analyze " + path + " or poslab report " + path + " read its table";
    if (start.rfind("\x93NUMPY", 0) == 0) throw Error(path + ": a NumPy table (.npy), not a poslab checkpoint", reads);
    if (start.size() >= 9 && start[8] == '{' && header > 1 && header < (uint64_t{1} << 32))
      throw Error(path + ": a .safetensors file, not a poslab checkpoint", reads + "s (poslab inspect lists them)");
    // A checkpoint is a zip archive: a file that does not start as one (a config, a log, text) is another file,
    // not a damaged checkpoint (an empty one, cut to nothing, still may be), unless it is where a run keeps its own.
    const std::filesystem::path p(path);
    const bool runs_own = (p.filename() == "latest.pt" || p.filename() == "best.pt") &&
                          std::filesystem::absolute(p, ec).parent_path().filename() == "checkpoints";
    if (!start.empty() && start.rfind("PK", 0) != 0 && !runs_own)
      throw Error(path + ": not a checkpoint (a poslab checkpoint is a zip archive; this file is not one)",
                  "pass a run folder or its checkpoint: RUN_DIR/checkpoints/latest.pt or best.pt");
    throw Error(path + ": not a readable checkpoint (damaged, truncated or another format)",
                damaged_checkpoint_hint(path));
  }
  // LibTorch reads the records without their CRC-32: a byte changed on disk would load as a wrong weight (and a
  // resume would train on from it, over the run's good checkpoints). A file checked once in this process is not read
  // again while it is the same file, unchanged (a resume opens latest.pt for its meta, then for its weights): the
  // same inode, size, and change time, which no write leaves as it was and no tool sets back. One changed less than
  // a second before its check is checked every time (a write in the same tick of the file system's clock would keep
  // its times).
  struct stat st {};
  const bool settled = ::stat(path.c_str(), &st) == 0 && st.st_ctim.tv_sec + 1 < ::time(nullptr);
  const std::string identity = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                               std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                               std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
                               std::to_string(st.st_ctim.tv_nsec);
  static std::mutex verified_mutex;
  static std::set<std::string> verified;  // identities of files whose records all matched their CRC-32
  {
    const std::lock_guard<std::mutex> hold(verified_mutex);
    if (settled && verified.count(identity)) return;
  }
  std::string damaged;
  try {
    damaged = first_damaged_zip_record(path);
  } catch (const Error& e) {
    throw Error(e.what(), damaged_checkpoint_hint(path));
  }
  if (!damaged.empty())
    throw Error(path + ": damaged: its record " + damaged +
                    " does not match the CRC-32 written with it (its bytes changed on disk after it was written)",
                damaged_checkpoint_hint(path));
  const std::lock_guard<std::mutex> hold(verified_mutex);
  if (settled) verified.insert(identity);
}

Error damaged_error(const std::string& path, const std::string& key, const std::string& what) {
  return Error(path + ": checkpoint entry '" + key + "' " + what, damaged_checkpoint_hint(path));
}

int64_t read_int(torch::serialize::InputArchive& ar, const std::string& key, const std::string& path) {
  const torch::Tensor t = read_tensor(ar, key, path);
  if (t.numel() != 1 || !c10::isIntegralType(t.scalar_type(), /*includeBool=*/false))
    throw damaged_error(
        path, key,
        "is not one integer (" + std::string(c10::toString(t.scalar_type())) + " " + c10::str(t.sizes()) + ")");
  return t.item<int64_t>();
}

std::string read_bytes(torch::serialize::InputArchive& ar, const std::string& key, const std::string& path) {
  const torch::Tensor t = read_tensor(ar, key, path);
  if (t.dim() != 1 || t.scalar_type() != torch::kUInt8)
    throw damaged_error(
        path, key,
        "is not a byte string (" + std::string(c10::toString(t.scalar_type())) + " " + c10::str(t.sizes()) + ")");
  return tensor_text(t);
}

// Every entry is checked for dtype and shape before use: a damaged file is an error naming the entry, never a
// LibTorch exception from deep inside (found by tests/fuzz/fuzz_checkpoint.cpp).
CheckpointMeta read_meta(torch::serialize::InputArchive& ar, const std::string& path) {
  CheckpointMeta m;
  torch::Tensor fmt;
  if (!ar.try_read("poslab_format", fmt))
    throw Error(path + ": not a poslab checkpoint (no 'poslab_format' entry)",
                "pass a checkpoint written by poslab train");
  m.format_version = read_int(ar, "poslab_format", path);
  if (m.format_version != kCheckpointFormat)
    throw Error(path + ": checkpoint format " + std::to_string(m.format_version) + ", this poslab reads format " +
                    std::to_string(kCheckpointFormat),
                "use the poslab version that wrote it");
  m.step = read_int(ar, "step", path);
  if (m.step < 0) throw damaged_error(path, "step", "is negative (" + std::to_string(m.step) + ")");
  const torch::Tensor losses = read_tensor(ar, "losses", path);  // (3,) train, val, best val
  if (losses.dim() != 1 || losses.numel() != 3 || !c10::isFloatingType(losses.scalar_type()))
    throw damaged_error(path, "losses", "is not 3 floating-point numbers");
  const torch::Tensor l = losses.to(torch::kFloat64);
  m.train_loss = l[0].item<double>();
  m.val_loss = l[1].item<double>();
  m.best_val_loss = l[2].item<double>();
  m.config_yaml = read_bytes(ar, "config_yaml", path);
  m.tokenizer_model = read_bytes(ar, "tokenizer_model", path);
  torch::Tensor has_hash;  // a fresh tensor per probe: try_read into a defined tensor would set_() it
  if (ar.try_read("corpus_hash", has_hash)) m.corpus_hash = read_bytes(ar, "corpus_hash", path);  // optional: newer
  torch::Tensor has_eval_step;
  if (ar.try_read("eval_step", has_eval_step)) {  // optional: newer
    m.eval_step = read_int(ar, "eval_step", path);
    if (m.eval_step < -1 || m.eval_step > m.step)
      throw damaged_error(path, "eval_step",
                          "is not a step of the run up to its step " + std::to_string(m.step) + " (" +
                              std::to_string(m.eval_step) + ")");
  }
  m.sampler_state = read_bytes(ar, "sampler_state", path);
  m.torch_rng_state = read_tensor(ar, "torch_rng_state", path);
  const int64_t rng_bytes = at::detail::getDefaultCPUGenerator().get_state().numel();
  if (m.torch_rng_state.scalar_type() != torch::kUInt8 || m.torch_rng_state.dim() != 1 ||
      (m.torch_rng_state.numel() != 0 && m.torch_rng_state.numel() != rng_bytes))
    throw damaged_error(path, "torch_rng_state",
                        "is not a CPU generator state (" + std::to_string(rng_bytes) + " bytes)");
  torch::Tensor has_cuda_state;
  if (ar.try_read("cuda_rng_state", has_cuda_state)) {  // optional: newer
    m.cuda_rng_state = read_tensor(ar, "cuda_rng_state", path);
    if (m.cuda_rng_state.scalar_type() != torch::kUInt8 || m.cuda_rng_state.dim() != 1 ||
        (m.cuda_rng_state.numel() != 0 && m.cuda_rng_state.numel() != kCudaRngStateBytes))
      throw damaged_error(path, "cuda_rng_state",
                          "is not a CUDA generator state (" + std::to_string(kCudaRngStateBytes) + " bytes)");
  }
  torch::serialize::InputArchive optimizer;  // its state is read only to continue a run (load_checkpoint)
  m.has_optimizer_state = ar.try_read("optimizer", optimizer);
  return m;
}

// The tensor stored under a dotted parameter name ("h.0.attn.c_attn.weight": nested archives h, 0, attn, c_attn),
// or an undefined tensor when it is absent.
torch::Tensor archived_tensor(torch::serialize::InputArchive& ar, const std::string& name) {
  const auto dot = name.find('.');
  torch::Tensor t;
  if (dot == std::string::npos) {
    ar.try_read(name, t);
    return t;
  }
  torch::serialize::InputArchive child;
  if (!ar.try_read(name.substr(0, dot), child)) return t;
  return archived_tensor(child, name.substr(dot + 1));
}

// AdamW moments must match their parameter in shape and dtype, or the first step fails deep inside LibTorch.
void check_optimizer_state(torch::optim::Optimizer& optimizer,
                           const torch::OrderedDict<std::string, torch::Tensor>& params, const std::string& path) {
  for (const auto& p : params) {
    const auto it = optimizer.state().find(optimizer_state_key(p.value()));
    if (it == optimizer.state().end()) continue;  // no step taken yet for this parameter
    const auto* adamw = dynamic_cast<const torch::optim::AdamWParamState*>(it->second.get());
    if (adamw == nullptr) continue;
    for (const auto& [what, m] :
         {std::pair<const char*, torch::Tensor>{"exp_avg", adamw->exp_avg()}, {"exp_avg_sq", adamw->exp_avg_sq()}}) {
      if (!m.defined() || m.sizes() != p.value().sizes() || m.scalar_type() != p.value().scalar_type())
        throw Error(
            path + ": optimizer state " + what + " of " + p.key() + " is " +
                (m.defined() ? c10::toString(m.scalar_type()) + std::string(" ") + c10::str(m.sizes()) : "missing") +
                ", the parameter is " + c10::toString(p.value().scalar_type()) + " " + c10::str(p.value().sizes()),
            damaged_checkpoint_hint(path));
    }
  }
}

void move_optimizer_state(torch::optim::Optimizer& optimizer, const torch::Device& device) {
  for (auto& [key, state] : optimizer.state()) {
    auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(state.get());
    if (adamw == nullptr) continue;
    adamw->exp_avg(adamw->exp_avg().to(device));
    adamw->exp_avg_sq(adamw->exp_avg_sq().to(device));
    if (adamw->max_exp_avg_sq().defined()) adamw->max_exp_avg_sq(adamw->max_exp_avg_sq().to(device));
  }
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
  ar.write("corpus_hash", to_tensor(meta.corpus_hash));
  ar.write("eval_step", torch::tensor(meta.eval_step));
  ar.write("sampler_state", to_tensor(meta.sampler_state));
  ar.write("torch_rng_state", meta.torch_rng_state.defined() ? meta.torch_rng_state : torch::empty({0}, torch::kUInt8));
  ar.write("cuda_rng_state",
           meta.cuda_rng_state.defined() ? meta.cuda_rng_state.to(torch::kCPU) : torch::empty({0}, torch::kUInt8));
  torch::serialize::OutputArchive model_ar;
  model->save(model_ar);
  ar.write("model", model_ar);
  if (optimizer != nullptr) {
    torch::serialize::OutputArchive opt_ar;
    optimizer->save(opt_ar);
    ar.write("optimizer", opt_ar);
  }
  // Streamed through our writer, never to a path: LibTorch 1.13's file writer throws from its destructor when
  // a write fails (a full disk), which ends the process. Ours records the failure and reports it at commit.
  // What the hint says is on disk: the previous checkpoint at this path, or none (the run's first checkpoint).
  std::error_code ec;
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  const std::string rdir = folder.filename() == "checkpoints" ? folder.parent_path().string() : "RUN_DIR";
  const std::string hint =
      std::filesystem::exists(path, ec)
          ? "free some space or fix permissions, then resume; the previous checkpoint is intact"
          : "free some space or fix permissions, then poslab train --resume " + rdir +
                ": no checkpoint was written before this one, so the run starts again in its folder";
  AtomicWriter out(path, "cannot write checkpoint", hint,
                   std::filesystem::exists(path, ec)
                       ? "then resume; the previous checkpoint is intact"
                       : "then poslab train --resume " + rdir +
                             ": no checkpoint was written before this one, so the run starts again in its folder");
  try {
    ar.save_to([&out](const void* data, size_t n) {
      out.write(data, n);
      return n;
    });
  } catch (const c10::Error& e) {
    throw Error(path + ": cannot write checkpoint: " + e.what_without_backtrace(), hint);
  }
  out.commit();
}

CheckpointMeta read_checkpoint_meta(const std::string& path) {
  torch::serialize::InputArchive ar;
  load_archive(ar, path);
  return read_meta(ar, path);
}

void check_resumable(const CheckpointMeta& meta, const std::string& path) {
  if (!meta.has_optimizer_state)
    throw Error(path +
                    ": the checkpoint holds no optimizer state (written by poslab extend, or weights only), so it "
                    "cannot continue a run",
                "start a new run from its weights: poslab train --init-from " + path);
}

CheckpointMeta load_checkpoint(const std::string& path, GPT& model, torch::optim::Optimizer* optimizer) {
  torch::serialize::InputArchive ar;
  load_archive(ar, path);
  CheckpointMeta meta = read_meta(ar, path);
  const Config stored = config_from_yaml(meta.config_yaml, path + " (stored config)");
  const std::string diff = architecture_difference(stored.model, model->cfg);
  if (!diff.empty())
    throw Error(path + ": checkpoint architecture differs from the requested model: " + diff,
                "use the checkpoint's own config (poslab train --resume RUN_DIR) or a matching config");
  struct Expected {
    std::string name;
    std::vector<int64_t> shape;
    c10::ScalarType dtype;
  };
  std::vector<Expected> expected;
  for (const auto& p : model->named_parameters())
    expected.push_back({p.key(), p.value().sizes().vec(), p.value().scalar_type()});
  const std::string hint =
      "the checkpoint was trained with another vocabulary or architecture, or is damaged: "
      "use its own config, or another checkpoint of the run";
  try {
    torch::serialize::InputArchive model_ar;
    ar.read("model", model_ar);
    // InputArchive::read checks neither shape nor dtype, and Tensor::set_ keeps the parameter's dtype: a double
    // in the file would be reinterpreted as floats. So every stored tensor is checked before loading.
    for (const auto& e : expected) {
      const torch::Tensor t = archived_tensor(model_ar, e.name);
      if (!t.defined()) continue;  // Module::load reports the missing entry by name
      if (t.sizes().vec() != e.shape || t.scalar_type() != e.dtype)
        throw Error(path + ": parameter " + e.name + " is " + c10::toString(t.scalar_type()) + " " +
                        c10::str(t.sizes()) + " in the checkpoint, the model expects " + c10::toString(e.dtype) + " " +
                        c10::str(c10::IntArrayRef(e.shape)),
                    hint);
    }
    // Loaded on the CPU (LibTorch's loader would otherwise move a parameter to the file's device), then moved to
    // the model's device with its optimizer state; Module::to keeps the parameters the optimizer refers to.
    const torch::Device device = model->wte->weight.device();
    model->to(torch::kCPU);
    model->load(model_ar);
    const auto params = model->named_parameters();
    // A run never checkpoints non-finite weights (train.on_nonfinite): NaN or Inf here is damage, which would
    // otherwise come out as a NaN loss (blamed on the learning rate by a resumed run) or a sampler's error.
    for (const auto& p : params) {
      const int64_t bad = (~torch::isfinite(p.value())).sum().item<int64_t>();
      if (bad > 0)
        throw Error(path + ": " + p.key() + " holds " + counted(bad, "NaN or Inf value"),
                    damaged_checkpoint_hint(path));
    }
    if (optimizer != nullptr) {
      check_resumable(meta, path);
      torch::serialize::InputArchive opt_ar;
      ar.read("optimizer", opt_ar);
      optimizer->load(opt_ar);
      check_optimizer_state(*optimizer, params, path);
    }
    model->to(device);
    if (optimizer != nullptr) move_optimizer_state(*optimizer, device);
  } catch (const c10::Error& e) {
    throw Error(path + ": cannot load weights: " + e.what_without_backtrace(), hint);
  }
  return meta;
}

torch::Tensor read_checkpoint_position_table(const std::string& path) {
  torch::serialize::InputArchive ar;
  load_archive(ar, path);
  (void)read_meta(ar, path);  // a readable poslab checkpoint, or an error naming the entry
  torch::serialize::InputArchive model_ar;
  if (!ar.try_read("model", model_ar))
    throw Error(path + ": checkpoint has no 'model' entry", damaged_checkpoint_hint(path));
  const torch::Tensor w = archived_tensor(model_ar, "wpe.weight");
  if (!w.defined())
    throw Error(path + ": the checkpoint has no position table (model.position = none)",
                "analyse a run with model.position learned or sinusoidal");
  if (w.dim() != 2 || !c10::isFloatingType(w.scalar_type()))
    throw damaged_error(path, "model/wpe.weight",
                        "is not a 2-D floating-point table (" + std::string(c10::toString(w.scalar_type())) + " " +
                            c10::str(w.sizes()) + ")");
  return w;
}

std::string architecture_difference(const ModelConfig& a, const ModelConfig& b) {
  std::string diff;
  auto cmp = [&](const char* key, auto x, auto y) {
    if (x != y)
      diff += std::string(diff.empty() ? "" : ", ") + key + " " + std::to_string(x) + " in the checkpoint vs " +
              std::to_string(y);
  };
  cmp("model.n_layer", a.n_layer, b.n_layer);
  cmp("model.n_head", a.n_head, b.n_head);
  cmp("model.n_embd", a.n_embd, b.n_embd);
  cmp("model.block_size", a.block_size, b.block_size);
  cmp("model.bias", a.bias, b.bias);
  if (a.position != b.position)
    diff +=
        std::string(diff.empty() ? "" : ", ") + "model.position " + a.position + " in the checkpoint vs " + b.position;
  return diff;
}

std::string damaged_checkpoint_hint(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  const std::string other = name == "best.pt" ? "latest.pt" : "best.pt";
  return "the file is damaged: use another checkpoint of the run, e.g. " + other +
         (name == "latest.pt" ? " (to resume from it: copy it over latest.pt)" : "");
}

}  // namespace poslab
