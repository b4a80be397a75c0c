// validate(): the constraints between config values (config.h). Each failure names the key, its value, where the
// value came from and what to change.
#include "config/config.h"

#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/kernel_paths.h"
#include "util/utf8.h"

namespace poslab {
namespace {

template <typename T>
std::string str(const T& v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The checks' vocabulary, over one config.
struct Checks {
  const Config& c;

  // Where a key's value came from: a file, "--set", "default", a checkpoint's "(stored config)" or, for run.name, "the
  // name of FILE".
  std::string source_of(const std::string& key) const { return origin_of(c, key); }

  // "SOURCE: key = value: why"; a value nobody set is named as poslab's default (a "default:" prefix read as the
  // file configs/default.yaml).
  [[noreturn]] void fail(const std::string& key, const std::string& value, const std::string& why) const {
    const std::string src = source_of(key);
    if (src == "default")
      throw Error(key + " = " + value + " (poslab's default): " + why,
                  "set " + key + " in your config or with --set " + key + "=VALUE");
    if (src.find("(stored config)") != std::string::npos)  // no file the user wrote: the checkpoint's own
      throw Error(src + ": " + key + " = " + value + ": " + why,
                  "the checkpoint's own config breaks this rule (a checkpoint of another poslab, or one changed "
                  "since it was written): use another checkpoint of the run (checkpoints/best.pt), or give " +
                      key + " with --set where a resume may change it");
    if (src.rfind("the name of ", 0) == 0)  // run.name taken from the config file's name
      throw Error(src + ": " + key + " = " + value + ": " + why,
                  "set run.name in " + src.substr(12) + " or with --set run.name=NAME (or rename the file)");
    throw Error(src + ": " + key + " = " + value + ": " + why, "change " + key + " in " + src);
  }

  // How directly a key's value was chosen: an override (--set, a sweep's set: or variant) over a file over poslab's
  // default. Of two keys that clash, the error names the one chosen most directly, as the one to change.
  int chosen(const std::string& key) const { return c.overridden.count(key) ? 2 : source_of(key) == "default" ? 0 : 1; }
  std::string described(const std::string& key, const std::string& value) const {
    return value + ", " + (source_of(key) == "default" ? "" : "from ") + origin_words(c, key);
  }

  void one_of(const std::string& key, const std::string& v, std::initializer_list<const char*> ok) const {
    std::string all;
    for (const char* o : ok) {
      if (v == o) return;
      all += (all.empty() ? "" : ", ") + std::string(o);
    }
    fail(key, v, "must be one of " + all);
  }
};

}  // namespace

constexpr int kMaxGradAccum = 65536;
constexpr int kMaxThreads = 1024;

void validate(const Config& c) {
  const Checks check{c};
  check.one_of("run.device", c.run.device, {"auto", "cpu", "cuda"});
  try {
    parse_kernel_paths(c.run.kernels, KernelPaths(), "run.kernels");
  } catch (const Error& e) {
    const std::string why = std::string(e.what()).substr(std::string("run.kernels = " + c.run.kernels + ": ").size());
    check.fail("run.kernels", c.run.kernels, why + " (" + e.hint() + ")");
  }
  if (c.data.corpus.empty() && c.data.tokenizer.model.empty())
    check.fail("data.corpus", "[]", "needs at least one file or folder");
  check.one_of("data.tokenizer.type", c.data.tokenizer.type, {"bpe", "unigram", "char"});
  if (c.data.tokenizer.type != "char" && (c.data.tokenizer.vocab_size < 16 || c.data.tokenizer.vocab_size > 65535))
    check.fail("data.tokenizer.vocab_size", str(c.data.tokenizer.vocab_size), "must be between 16 and 65535");
  if (!(c.data.val_fraction > 0.0 && c.data.val_fraction < 1.0))
    check.fail("data.val_fraction", str(c.data.val_fraction), "must be strictly between 0 and 1");
  if (c.model.n_layer < 1) check.fail("model.n_layer", str(c.model.n_layer), "must be at least 1");
  if (c.model.n_head < 1) check.fail("model.n_head", str(c.model.n_head), "must be at least 1");
  // One channel: LayerNorm maps every vector to its bias, so no weight below it gets a gradient and the loss stays
  // that of a uniform guess.
  if (c.model.n_embd < 2)
    check.fail("model.n_embd", str(c.model.n_embd),
               "must be at least 2: LayerNorm over one channel gives a constant, and the model cannot learn");
  if (c.model.n_embd % c.model.n_head != 0) {
    if (check.chosen("model.n_head") > check.chosen("model.n_embd"))
      check.fail("model.n_head", str(c.model.n_head),
                 "must divide model.n_embd (" + check.described("model.n_embd", str(c.model.n_embd)) + ")");
    check.fail("model.n_embd", str(c.model.n_embd),
               "must be divisible by model.n_head (" + check.described("model.n_head", str(c.model.n_head)) + ")");
  }
  // 2 or 3 positions train, but no snapshot of their table could be analysed (src/analysis/analysis.cpp).
  if (c.model.block_size < 4)
    check.fail("model.block_size", str(c.model.block_size),
               "must be at least 4: the position table's analysis needs 4 rows");
  if (!(c.model.dropout >= 0.0 && c.model.dropout < 1.0))
    check.fail("model.dropout", str(c.model.dropout), "must be in [0, 1)");
  check.one_of("model.position", c.model.position, {"learned", "sinusoidal", "none"});
  check.one_of("model.sinusoidal_scale", c.model.sinusoidal_scale, {"match", "none"});
  if (!(c.model.wpe_init_std >= 0.0)) check.fail("model.wpe_init_std", str(c.model.wpe_init_std), "must be >= 0");
  if (c.model.position == "sinusoidal" && c.model.n_embd % 2 != 0)
    check.fail("model.n_embd", str(c.model.n_embd), "must be even for model.position = sinusoidal");
  if (c.model.extended_from != 0 && !(c.model.extended_from >= 4 && c.model.extended_from < c.model.block_size))
    check.fail("model.extended_from", str(c.model.extended_from),
               "must be 0 (not extended) or a block_size below model.block_size (" + str(c.model.block_size) + ")");
  if ((c.model.extended_from == 0) != c.model.extend_method.empty())
    check.fail("model.extend_method", "'" + c.model.extend_method + "'",
               "is set by poslab extend together with model.extended_from (" + str(c.model.extended_from) +
                   "): both or neither");
  if (!c.model.extend_method.empty())
    check.one_of("model.extend_method", c.model.extend_method, {"linear", "cubic", "nearest", "copy", "random"});
  check.one_of("train.trainable", c.train.trainable, {"all", "wpe"});
  if (c.train.trainable == "wpe" && c.model.position != "learned")
    check.fail("train.trainable", "wpe", "needs a learned table to train (model.position is " + c.model.position + ")");
  if (!(c.train.position_lr_scale > 0.0 && std::isfinite(c.train.position_lr_scale)))
    check.fail("train.position_lr_scale", str(c.train.position_lr_scale),
               "must be a number above 0 (1: lr as the rest)");
  else if (c.train.position_lr_scale != 1.0 && c.model.position != "learned")
    check.fail("train.position_lr_scale", str(c.train.position_lr_scale),
               "scales a learned table's learning rate; model.position is " + c.model.position + ": leave it at 1");
  if (c.train.batch_size < 1) check.fail("train.batch_size", str(c.train.batch_size), "must be at least 1");
  if (c.train.grad_accum < 1 || c.train.grad_accum > kMaxGradAccum)
    check.fail("train.grad_accum", str(c.train.grad_accum),
               "must be from 1 to " + str(kMaxGradAccum) +
                   " (micro-batches a step; a larger step is a larger "
                   "train.batch_size)");
  // More threads than any machine has cores: each step waits for thousands of them taking turns.
  if (c.run.threads > kMaxThreads)
    check.fail("run.threads", str(c.run.threads),
               "must be auto or from 1 to " + str(kMaxThreads) + " (auto takes the machine's cores)");
  if (c.run.batch_split > 1 && c.model.dropout > 0)
    check.fail("run.batch_split", str(c.run.batch_split),
               "must be 1 or auto when model.dropout > 0 (dropout draws from one generator shared by the threads, so "
               "the run would not repeat)");
  if (c.run.batch_split > c.train.batch_size)
    check.fail("run.batch_split", str(c.run.batch_split),
               "must be at most train.batch_size (" + str(c.train.batch_size) + ")");
  if (c.run.dist_timeout_s < 1)
    check.fail("run.dist_timeout_s", str(c.run.dist_timeout_s),
               "must be at least 1 (seconds a rank waits for the others)");
  if (c.train.max_steps < 1) check.fail("train.max_steps", str(c.train.max_steps), "must be at least 1");
  if (!(c.train.lr > 0.0)) check.fail("train.lr", str(c.train.lr), "must be > 0");
  if (!(c.train.min_lr >= 0.0 && c.train.min_lr <= c.train.lr))
    check.fail("train.min_lr", str(c.train.min_lr), "must be in [0, train.lr = " + str(c.train.lr) + "]");
  if (c.train.warmup_steps < 0) check.fail("train.warmup_steps", str(c.train.warmup_steps), "must be >= 0");
  if (!(c.train.weight_decay >= 0.0)) check.fail("train.weight_decay", str(c.train.weight_decay), "must be >= 0");
  if (!(c.train.beta1 >= 0.0 && c.train.beta1 < 1.0))
    check.fail("train.beta1", str(c.train.beta1), "must be in [0, 1)");
  if (!(c.train.beta2 >= 0.0 && c.train.beta2 < 1.0))
    check.fail("train.beta2", str(c.train.beta2), "must be in [0, 1)");
  if (!(c.train.grad_clip >= 0.0))
    check.fail("train.grad_clip", str(c.train.grad_clip), "must be >= 0 (0 turns clipping off)");
  check.one_of("train.dtype", c.train.dtype, {"float32", "bfloat16", "auto"});
  check.one_of("train.on_nonfinite", c.train.on_nonfinite, {"stop", "skip"});
  check.one_of("train.adamw", c.train.adamw, {"auto", "poslab", "fused"});
  if (c.train.eval_every < 1) check.fail("train.eval_every", str(c.train.eval_every), "must be at least 1");
  if (c.train.eval_batches < 1) check.fail("train.eval_batches", str(c.train.eval_batches), "must be at least 1");
  if (c.train.checkpoint_every < 1)
    check.fail("train.checkpoint_every", str(c.train.checkpoint_every), "must be at least 1");
  if (c.train.log_every < 1) check.fail("train.log_every", str(c.train.log_every), "must be at least 1");
  if (c.snapshot.every < 1) check.fail("snapshot.every", str(c.snapshot.every), "must be at least 1");
  // What a CUDA graph cannot replay, whatever the machine (train/step_graph.cpp checks the device and processes too):
  // of the two keys, the one chosen most directly is named, as for any two keys that clash.
  auto graph_clash = [&](const std::string& key, const std::string& value, const std::string& graph_why,
                         const std::string& key_why) {
    if (check.chosen("train.cuda_graph") >= check.chosen(key)) check.fail("train.cuda_graph", "true", graph_why);
    check.fail(key, value,
               "train.cuda_graph is true (" + check.described("train.cuda_graph", "true") + "), and " + key_why);
  };
  if (c.train.cuda_graph && c.run.device == "cpu")
    graph_clash("run.device", "cpu",
                "a CUDA graph runs on a GPU, and run.device is cpu (" + check.described("run.device", "cpu") + ")",
                "a CUDA graph runs on a GPU");
  if (c.train.cuda_graph && c.model.dropout > 0)
    graph_clash("model.dropout", str(c.model.dropout),
                "needs model.dropout 0 (" + check.described("model.dropout", str(c.model.dropout)) +
                    "): a graph would replay the random numbers drawn at its capture",
                "a graph would replay the random numbers drawn at its capture");
  if (c.train.cuda_graph && c.train.adamw == "poslab")
    graph_clash("train.adamw", c.train.adamw,
                "needs train.adamw auto or fused (" + check.described("train.adamw", c.train.adamw) +
                    "): poslab's AdamW reads the gradient norm on the host",
                "a graph needs the step on the device: auto or fused");
  if (c.run.name.empty()) check.fail("run.name", "''", "must not be empty");
  if (c.run.out_dir.empty()) check.fail("run.out_dir", "''", "must not be empty");
  // Names poslab records in its JSON files and pages, which hold UTF-8 text alone.
  const auto utf8 = [&](const std::string& key, const std::string& value) {
    if (!is_utf8(value))
      check.fail(key, "'" + escaped_utf8(value) + "'",
                 "is not UTF-8 text (its stray bytes shown as \\xHH): poslab records it in its JSON files, "
                 "which hold UTF-8 alone; rename the folder or file to a UTF-8 name");
  };
  utf8("run.name", c.run.name);
  utf8("run.out_dir", c.run.out_dir);
  for (const std::string& path : c.data.corpus) utf8("data.corpus", path);
  utf8("data.cache_dir", c.data.cache_dir);
  utf8("data.tokenizer.model", c.data.tokenizer.model);
  utf8("train.init_from", c.train.init_from);
}

std::vector<std::string> unread_settings(const Config& c) {
  const std::string position = "model.position is " + c.model.position;
  const std::string tokenizer_file = "the tokenizer is read from data.tokenizer.model (" + c.data.tokenizer.model + ")";
  std::vector<std::string> said;
  for (const ConfigChange& change : config_changes(Config(), c)) {
    const std::string& k = change.key;
    std::string why;
    if (k == "model.wpe_init_std" && c.model.position != "learned")
      why = "it draws a learned table's start, and " + position;
    else if (k == "train.decay_position_table" && c.model.position != "learned")
      why = "it decays a learned table, and " + position;
    else if (k == "train.decay_position_table" && c.train.weight_decay == 0.0)
      why = "train.weight_decay is 0, so nothing decays";
    else if (k == "model.sinusoidal_scale" && c.model.position != "sinusoidal")
      why = "it scales the sinusoidal table, and " + position;
    else if (k == "data.tokenizer.vocab_size" && !c.data.tokenizer.model.empty())
      why = tokenizer_file + ", whose pieces are its own";
    else if (k == "data.tokenizer.vocab_size" && c.data.tokenizer.type == "char")
      why = "a char tokenizer's pieces are the corpus's characters (and the byte pieces)";
    else if (k == "data.tokenizer.type" && !c.data.tokenizer.model.empty())
      why = tokenizer_file + ", whose type is its own";
    else if (k == "train.tf32" && c.run.device == "cpu")
      why = "TF32 is a GPU's, and run.device is cpu";
    if (!why.empty())
      said.push_back(origin_prefix(c, k) + k + " = " + change.to + " is not read: " + why +
                     "; leave it out of this config");
  }
  return said;
}

void validate_new_run(const Config& c) {
  const Checks check{c};
  if (c.run.name == "." || c.run.name == ".." ||
      c.run.name.find_first_of(std::string("/\\\0", 3)) != std::string::npos) {
    std::string shown = c.run.name;  // a NUL byte shown as ␀: the message is not cut there
    make_terminal_safe(shown);
    check.fail("run.name", "'" + shown + "'",
               "must be one folder name inside run.out_dir (no '/', '.' or '..'): set run.out_dir for another place");
  }
  if (c.run.name.size() > 255) {  // NAME_MAX of Linux's file systems
    std::string shown = c.run.name.substr(0, 40);
    make_terminal_safe(shown);
    check.fail(
        "run.name", "'" + shown + "…'",
        "is " + std::to_string(c.run.name.size()) + " bytes long; a folder's name holds at most 255: shorten it");
  }
  // "~" is the shell's: a config's path keeps it as written, a folder named "~" in the folder poslab runs in
  if (c.run.out_dir == "~" || c.run.out_dir.rfind("~/", 0) == 0)
    check.fail("run.out_dir", c.run.out_dir,
               "'~' is not the home folder in a config (only a shell expands it): write the path out, e.g. " +
                   std::string(std::getenv("HOME") != nullptr ? std::getenv("HOME") : "/home/NAME") +
                   c.run.out_dir.substr(1));
  // the generators take an unsigned seed; sample and sweeps take 0 and up
  if (c.run.seed < 0) check.fail("run.seed", str(c.run.seed), "must be 0 or more");
}

}  // namespace poslab
