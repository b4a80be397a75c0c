// The run configuration: one struct per YAML section, defaults in the member initialisers.
// A YAML file lists only what differs; `--set section.key=value` overrides are applied last.
// config.cpp reads a config (YAML, --set), validate.cpp checks it, fields.cpp holds the table of keys and to_yaml.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace poslab {

struct RunConfig {
  std::string name = "default";  // run folder name under out_dir
  std::string out_dir = "runs";  // RUN_DIR = out_dir/name
  int64_t seed = 1337;           // seeds init, dropout and the batch sampler
  std::string device = "auto";   // auto | cpu | cuda
  int threads = 0;               // intra-op threads; 0 = auto (all cores); YAML "auto" or N
  int batch_split = 0;           // batch slices trained in parallel threads (CPU); 0 = auto; YAML "auto" or N
  std::string kernels = "auto";  // CPU kernel paths: auto | measure | default | libtorch | NAME=VALUE,…
  bool report = true;            // write RUN_DIR/report/index.html when training finishes
  bool tensorboard = true;       // write TensorBoard's events and projector files into RUN_DIR/tensorboard as it trains
  int dist_timeout_s = 300;      // many processes: how long a rank waits for the others before it fails
};

struct TokenizerConfig {
  std::string type = "bpe";  // bpe | unigram | char (sentencepiece model types)
  int vocab_size = 2048;     // ignored for char: the corpus's characters decide
  std::string model;         // optional existing sentencepiece .model; empty = train one
};

struct DataConfig {
  std::vector<std::string> corpus = {"/usr/share/games/fortunes"};  // files or folders (recursive)
  TokenizerConfig tokenizer;
  double val_fraction = 0.1;  // tail of the token stream held out for validation
  std::string cache_dir;      // tokenizer + token cache; empty = data/dataset.h's cache_dir() chooses
};

struct ModelConfig {
  int n_layer = 4;
  int n_head = 4;
  int n_embd = 128;
  int block_size = 64;  // context length = rows of the position table
  double dropout = 0.0;
  bool bias = true;                        // biases in Linear and LayerNorm
  std::string position = "learned";        // learned | sinusoidal | none
  std::string sinusoidal_scale = "match";  // match: the fixed table's rows scaled to the token rows' norm at init
                                           // (0.02·√C, against √(C/2) unscaled) | none: as the formula gives them
  double wpe_init_std = 0.02;              // N(0, std^2) init of the learned position table
  int extended_from = 0;                   // poslab extend: the block_size the table was stretched from; 0 = never
  std::string extend_method;               // poslab extend: linear | cubic | nearest | copy | random; "" = never
};

struct TrainConfig {
  int batch_size = 32;
  int grad_accum = 1;  // micro-batches per optimizer step
  int max_steps = 2000;
  double lr = 1e-3;      // peak learning rate after warmup
  double min_lr = 1e-4;  // floor of the cosine decay
  int warmup_steps = 100;
  double weight_decay = 0.1;
  bool decay_position_table = true;  // put wpe in the decayed group (nanoGPT, llm.c)
  double position_lr_scale = 1.0;    // wpe's learning rate is lr × this (an AdamW group of its own when not 1)
  double beta1 = 0.9;
  double beta2 = 0.99;
  double grad_clip = 1.0;             // max global grad norm; 0 = off
  std::string dtype = "float32";      // float32 | bfloat16 (forward under autocast) | auto (bf16 where native)
  std::string on_nonfinite = "stop";  // stop | skip: what a NaN/Inf loss or gradient does
  std::string adamw = "auto";         // auto | poslab | fused: the clip + AdamW step (train/optim.h): poslab's CPU
                                      // kernel, or LibTorch's fused kernel on the device with no host read; auto =
                                      // fused on CUDA, poslab on the CPU
  bool tf32 = false;                  // CUDA: float32 products in TF32 (faster; not bit-comparable to float32)
  bool cuda_graph = false;            // CUDA: the step captured once as a CUDA graph and replayed (train/step_graph.h)
  int eval_every = 250;
  int eval_batches = 20;
  int checkpoint_every = 500;
  int log_every = 10;
  std::string init_from;          // a checkpoint whose weights start the run (not its optimizer or step); "" = none
  std::string trainable = "all";  // all | wpe (only the position table trains; the rest stays as loaded)
};

struct SnapshotConfig {
  int every = 100;  // position-table snapshot interval in steps (plus step 0 and the last)
};

struct Config {
  RunConfig run;
  DataConfig data;
  ModelConfig model;
  TrainConfig train;
  SnapshotConfig snapshot;

  // Where each key's value came from: "default", a file path, an override's source ("--set", a sweep file's set: or
  // variant), "the name of FILE" (run.name from a config file's name). Used in error messages.
  std::map<std::string, std::string> origin;
  // The keys whose value an override gave, on top of a file: of two keys that clash, validate blames the one given
  // most directly.
  std::set<std::string> overridden;
};

// One "section.key=value" given on top of a config, and where it was given: "--set" on the command line, or a sweep
// file's "sweeps/x.yaml: set:" or "sweeps/x.yaml: variant lr-0.003". Errors about its key name that source.
struct Override {
  Override(std::string assignment_, std::string source_ = "--set")
      : assignment(std::move(assignment_)), source(std::move(source_)) {}
  Override(const char* assignment_) : assignment(assignment_) {}
  std::string assignment;
  std::string source = "--set";
};

// The command line's --set values, each as an Override from "--set".
std::vector<Override> command_line_sets(const std::vector<std::string>& sets);

// Defaults, then the YAML file (may be empty: defaults only), then each "section.key=value" override.
// Throws poslab::Error naming the file, key and value for unknown keys, wrong types, impossible values.
Config load_config(const std::string& path, const std::vector<Override>& overrides = {});

// Whether YAML text holds a second document: content after a "---" or "..." marker line that follows content
// (yaml-cpp's Load reads the first document and drops the rest without a word). Config and sweep files are one.
bool has_second_document(const std::string& text);

// Parses YAML text as if read from `source_name` (used for configs stored in checkpoints).
Config config_from_yaml(const std::string& yaml, const std::string& source_name);

// Applies one "section.key=value" override (value parsed as YAML), its key's origin the override's source.
void apply_override(Config& cfg, const Override& o);

// Checks cross-field constraints (n_embd % n_head, block_size >= 4, lr > 0, ...).
void validate(const Config& cfg);

// The keys set away from their defaults that this config never reads (model.wpe_init_std with a sinusoidal
// table, data.tokenizer.vocab_size for a char tokenizer, train.tf32 on the CPU, ...), each said as a warning:
// "SOURCE: key = value is not read: why; leave it out of this config". Not an error: a sweep's set: may hold a key
// that only some of its variants read.
std::vector<std::string> unread_settings(const Config& cfg);

// What a run about to be made needs beyond validate: run.name one folder name inside run.out_dir, run.seed 0 or
// more. Not asked of a stored config (a checkpoint's, a run folder's), which names a folder that exists already.
void validate_new_run(const Config& cfg);

// The full effective config as YAML, every key, in section order.
std::string to_yaml(const Config& cfg);

// All valid dotted keys, in order (for error messages and docs).
std::vector<std::string> config_keys();

// A key whose value differs between two configs, each value as to_yaml writes it.
struct ConfigChange {
  std::string key, from, to;
};

// Where a key's value came from: a file's path, "--set", a checkpoint's "(stored config)", "the name of FILE" (run.name
// from a config file's name), or "default" (also for a config built in code, which records no origins).
std::string origin_of(const Config& c, const std::string& key);

// The config of a checkpoint poslab extend wrote, not trained since: model.extended_from set and no train.init_from
// (a run started from it sets one). Its rows from model.extended_from on were never trained.
bool is_untrained_extension(const Config& c);
// The same for messages: "poslab's default" for "default" (a "default:" read as configs/default.yaml); and as a
// message's prefix, "SOURCE: ", or nothing for a default.
std::string origin_words(const Config& c, const std::string& key);
std::string origin_prefix(const Config& c, const std::string& key);

// Every key, in section order, whose value in `to` differs from its value in `from`.
std::vector<ConfigChange> config_changes(const Config& from, const Config& to);

}  // namespace poslab
