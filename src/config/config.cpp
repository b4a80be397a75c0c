#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>

#include "util/error.h"
#include "util/kernel_paths.h"

namespace poslab {
namespace {

// One config key: how to read it from YAML into the struct and write it back.
struct Field {
  std::string key;   // "section.key" (or "data.tokenizer.type")
  std::string type;  // for messages: "int", "float", "bool", "string", "list of strings", ...
  std::function<void(Config&, const YAML::Node&)> set;
  std::function<void(const Config&, YAML::Emitter&)> emit;
};

template <typename T>
void emit_value(YAML::Emitter& e, const T& v) { e << v; }

// Shortest decimal that reads back as the same double (0.1, not 0.10000000000000001).
void emit_value(YAML::Emitter& e, const double& v) {
  char buf[32];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string text = buf;
  if (text.find_first_of(".en") == std::string::npos) text += ".0";  // keep it a float: 1 -> 1.0
  e << text;
}

// Field for a plain scalar member reached by `get`.
template <typename T, typename Get>
Field make_field(std::string key, std::string type, Get get) {
  Field f;
  f.key = std::move(key);
  f.type = std::move(type);
  f.set = [get](Config& c, const YAML::Node& n) { get(c) = n.as<T>(); };
  f.emit = [get](const Config& c, YAML::Emitter& e) { emit_value(e, get(const_cast<Config&>(c))); };
  return f;
}

#define POSLAB_FIELD(T, type, path) \
  make_field<T>(#path, type, [](Config& c) -> T& { return c.path; })

const std::vector<Field>& fields() {
  static const std::vector<Field> table = [] {
    std::vector<Field> t = {
        POSLAB_FIELD(std::string, "string", run.name),
        POSLAB_FIELD(std::string, "string", run.out_dir),
        POSLAB_FIELD(int64_t, "integer", run.seed),
        POSLAB_FIELD(std::string, "auto | cpu | cuda", run.device),
    };
    // "auto" (stored as 0) or a positive integer.
    auto auto_or_positive = [](const char* key, int RunConfig::*member) {
      Field f;
      f.key = key;
      f.type = "auto or a positive integer";
      f.set = [member](Config& c, const YAML::Node& n) {
        if (n.IsScalar() && n.Scalar() == "auto") {
          c.run.*member = 0;
        } else {
          c.run.*member = n.as<int>();
          if (c.run.*member <= 0) throw YAML::BadConversion(n.Mark());
        }
      };
      f.emit = [member](const Config& c, YAML::Emitter& e) {
        if (c.run.*member == 0) e << "auto"; else e << c.run.*member;
      };
      return f;
    };
    t.push_back(auto_or_positive("run.threads", &RunConfig::threads));
    t.push_back(auto_or_positive("run.batch_split", &RunConfig::batch_split));
    t.push_back(POSLAB_FIELD(std::string, "auto | measure | default | libtorch | NAME=VALUE,…", run.kernels));
    t.push_back(POSLAB_FIELD(bool, "true | false", run.report));
    t.push_back(POSLAB_FIELD(int, "integer (seconds)", run.dist_timeout_s));

    Field corpus;
    corpus.key = "data.corpus";
    corpus.type = "a path or a list of paths";
    corpus.set = [](Config& c, const YAML::Node& n) {
      if (n.IsScalar()) c.data.corpus = {n.as<std::string>()};
      else c.data.corpus = n.as<std::vector<std::string>>();
    };
    corpus.emit = [](const Config& c, YAML::Emitter& e) {
      e << YAML::Flow << c.data.corpus << YAML::Block;
    };
    t.push_back(corpus);

    std::vector<Field> rest = {
        POSLAB_FIELD(std::string, "bpe | unigram | char", data.tokenizer.type),
        POSLAB_FIELD(int, "integer", data.tokenizer.vocab_size),
        POSLAB_FIELD(std::string, "string (path)", data.tokenizer.model),
        POSLAB_FIELD(double, "number", data.val_fraction),
        POSLAB_FIELD(std::string, "string (path)", data.cache_dir),
        POSLAB_FIELD(int, "integer", model.n_layer),
        POSLAB_FIELD(int, "integer", model.n_head),
        POSLAB_FIELD(int, "integer", model.n_embd),
        POSLAB_FIELD(int, "integer", model.block_size),
        POSLAB_FIELD(double, "number", model.dropout),
        POSLAB_FIELD(bool, "true | false", model.bias),
        POSLAB_FIELD(std::string, "learned | sinusoidal | none", model.position),
        POSLAB_FIELD(double, "number", model.wpe_init_std),
        POSLAB_FIELD(int, "integer", model.extended_from),
        POSLAB_FIELD(std::string, "linear | cubic | nearest | copy | random", model.extend_method),
        POSLAB_FIELD(int, "integer", train.batch_size),
        POSLAB_FIELD(int, "integer", train.grad_accum),
        POSLAB_FIELD(int, "integer", train.max_steps),
        POSLAB_FIELD(double, "number", train.lr),
        POSLAB_FIELD(double, "number", train.min_lr),
        POSLAB_FIELD(int, "integer", train.warmup_steps),
        POSLAB_FIELD(double, "number", train.weight_decay),
        POSLAB_FIELD(bool, "true | false", train.decay_position_table),
        POSLAB_FIELD(double, "number", train.beta1),
        POSLAB_FIELD(double, "number", train.beta2),
        POSLAB_FIELD(double, "number", train.grad_clip),
        POSLAB_FIELD(std::string, "float32 | bfloat16 | auto", train.dtype),
        POSLAB_FIELD(std::string, "stop | skip", train.on_nonfinite),
        POSLAB_FIELD(int, "integer", train.eval_every),
        POSLAB_FIELD(int, "integer", train.eval_batches),
        POSLAB_FIELD(int, "integer", train.checkpoint_every),
        POSLAB_FIELD(int, "integer", train.log_every),
        POSLAB_FIELD(std::string, "string (path of a checkpoint)", train.init_from),
        POSLAB_FIELD(std::string, "all | wpe", train.trainable),
        POSLAB_FIELD(int, "integer", snapshot.every),
    };
    t.insert(t.end(), rest.begin(), rest.end());
    return t;
  }();
  return table;
}

#undef POSLAB_FIELD

const Field* find_field(const std::string& key) {
  for (const auto& f : fields())
    if (f.key == key) return &f;
  return nullptr;
}

bool is_section_prefix(const std::string& prefix) {
  for (const auto& f : fields())
    if (f.key.rfind(prefix + ".", 0) == 0) return true;
  return false;
}

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "(empty)";
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

void set_field(Config& cfg, const std::string& key, const YAML::Node& value, const std::string& source) {
  const Field* f = find_field(key);
  if (f == nullptr) {
    std::string all;
    for (const auto& k : config_keys()) all += (all.empty() ? "" : ", ") + k;
    throw Error(source + ": unknown config key '" + key + "'",
                "valid keys are: " + all);
  }
  try {
    if (!value.IsDefined() || value.IsNull()) throw YAML::BadConversion(value.Mark());
    f->set(cfg, value);
  } catch (const YAML::Exception&) {
    throw Error(source + ": " + key + " = " + describe(value) + ": expected " + f->type,
                "fix the value of " + key + " in " + source);
  }
  cfg.origin[key] = source;
}

// Walks a YAML map, descending into sections, and sets every leaf key.
void merge_map(Config& cfg, const YAML::Node& node, const std::string& prefix, const std::string& source) {
  for (const auto& kv : node) {
    if (!kv.first.IsScalar())
      throw Error(source + ": a key under '" + (prefix.empty() ? "(top level)" : prefix) + "' is not a plain name",
                  "write keys as 'name: value'");
    const std::string name = kv.first.Scalar();
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    if (kv.second.IsMap() && find_field(key) == nullptr && is_section_prefix(key)) {
      merge_map(cfg, kv.second, key, source);
    } else if (find_field(key) == nullptr && is_section_prefix(key)) {
      throw Error(source + ": '" + key + "' is a section and must be a map of keys",
                  "write it as '" + name + ":' followed by indented 'key: value' lines");
    } else {
      set_field(cfg, key, kv.second, source);
    }
  }
}

void merge_yaml_text(Config& cfg, const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(source + ": not valid YAML: " + e.what(), "check the indentation and quoting near that line");
  }
  if (!root.IsDefined() || root.IsNull()) return;  // empty file: defaults only
  if (!root.IsMap())
    throw Error(source + ": the top level must be a map of sections (run, data, model, train, snapshot)");
  merge_map(cfg, root, "", source);
}

Config with_default_origins() {
  Config cfg;
  for (const auto& k : config_keys()) cfg.origin[k] = "default";
  return cfg;
}

}  // namespace

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  for (const auto& f : fields()) keys.push_back(f.key);
  return keys;
}

void apply_override(Config& cfg, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error("--set " + assignment + ": expected section.key=value", "for example --set train.max_steps=50");
  const std::string key = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw Error("--set " + assignment + ": the value is not valid YAML: " + e.what());
  }
  if (find_field(key) == nullptr && is_section_prefix(key))
    throw Error("--set " + assignment + ": '" + key + "' is a section, not a key", "name a key, e.g. " + key + ".<key>=value");
  set_field(cfg, key, value, "--set");
}

Config config_from_yaml(const std::string& yaml, const std::string& source_name) {
  Config cfg = with_default_origins();
  merge_yaml_text(cfg, yaml, source_name);
  validate(cfg);
  return cfg;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  Config cfg = with_default_origins();
  if (!path.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw Error(path + ": config file not found", "pass an existing YAML file, e.g. configs/default.yaml");
    YAML::Node root;
    try {
      root = YAML::LoadFile(path);
    } catch (const YAML::Exception& e) {
      throw Error(path + ": not valid YAML: " + e.what(), "check the indentation and quoting near that line");
    }
    if (root.IsDefined() && !root.IsNull()) {
      if (!root.IsMap())
        throw Error(path + ": the top level must be a map of sections (run, data, model, train, snapshot)");
      merge_map(cfg, root, "", path);
    }
    // A config file names its run unless it says otherwise.
    if (cfg.origin["run.name"] == "default")
      cfg.run.name = std::filesystem::path(path).stem().string();
  }
  for (const auto& o : overrides) apply_override(cfg, o);
  validate(cfg);
  return cfg;
}

void validate(const Config& c) {
  auto source_of = [&](const std::string& key) {
    auto it = c.origin.find(key);
    return it == c.origin.end() ? std::string("default") : it->second;
  };
  auto fail = [&](const std::string& key, const std::string& value, const std::string& why) {
    const std::string src = source_of(key);
    throw Error(src + ": " + key + " = " + value + ": " + why, "change " + key + (src == "default" ? " in your config" : " in " + src));
  };
  auto str = [](auto v) { std::ostringstream s; s << v; return s.str(); };
  auto one_of = [&](const std::string& key, const std::string& v, std::initializer_list<const char*> ok) {
    std::string all;
    for (const char* o : ok) {
      if (v == o) return;
      all += (all.empty() ? "" : ", ") + std::string(o);
    }
    fail(key, v, "must be one of " + all);
  };
  one_of("run.device", c.run.device, {"auto", "cpu", "cuda"});
  try {
    parse_kernel_paths(c.run.kernels, KernelPaths(), "run.kernels");
  } catch (const Error& e) {
    fail("run.kernels", c.run.kernels, std::string(e.what()).substr(std::string("run.kernels = " + c.run.kernels + ": ").size()) +
                                            " (" + e.hint() + ")");
  }
  if (c.data.corpus.empty() && c.data.tokenizer.model.empty())
    fail("data.corpus", "[]", "needs at least one file or folder");
  one_of("data.tokenizer.type", c.data.tokenizer.type, {"bpe", "unigram", "char"});
  if (c.data.tokenizer.type != "char" && (c.data.tokenizer.vocab_size < 16 || c.data.tokenizer.vocab_size > 65535))
    fail("data.tokenizer.vocab_size", str(c.data.tokenizer.vocab_size), "must be between 16 and 65535");
  if (!(c.data.val_fraction > 0.0 && c.data.val_fraction < 1.0))
    fail("data.val_fraction", str(c.data.val_fraction), "must be strictly between 0 and 1");
  if (c.model.n_layer < 1) fail("model.n_layer", str(c.model.n_layer), "must be at least 1");
  if (c.model.n_head < 1) fail("model.n_head", str(c.model.n_head), "must be at least 1");
  if (c.model.n_embd < 1) fail("model.n_embd", str(c.model.n_embd), "must be at least 1");
  if (c.model.n_embd % c.model.n_head != 0)
    fail("model.n_embd", str(c.model.n_embd),
         "must be divisible by model.n_head (" + str(c.model.n_head) + ", from " + source_of("model.n_head") + ")");
  if (c.model.block_size < 2) fail("model.block_size", str(c.model.block_size), "must be at least 2");
  if (!(c.model.dropout >= 0.0 && c.model.dropout < 1.0))
    fail("model.dropout", str(c.model.dropout), "must be in [0, 1)");
  one_of("model.position", c.model.position, {"learned", "sinusoidal", "none"});
  if (!(c.model.wpe_init_std >= 0.0)) fail("model.wpe_init_std", str(c.model.wpe_init_std), "must be >= 0");
  if (c.model.position == "sinusoidal" && c.model.n_embd % 2 != 0)
    fail("model.n_embd", str(c.model.n_embd), "must be even for model.position = sinusoidal");
  if (c.model.extended_from != 0 && !(c.model.extended_from >= 2 && c.model.extended_from < c.model.block_size))
    fail("model.extended_from", str(c.model.extended_from),
         "must be 0 (not extended) or a block_size below model.block_size (" + str(c.model.block_size) + ")");
  if ((c.model.extended_from == 0) != c.model.extend_method.empty())
    fail("model.extend_method", "'" + c.model.extend_method + "'",
         "is set by poslab extend together with model.extended_from (" + str(c.model.extended_from) + "): both or neither");
  if (!c.model.extend_method.empty())
    one_of("model.extend_method", c.model.extend_method, {"linear", "cubic", "nearest", "copy", "random"});
  one_of("train.trainable", c.train.trainable, {"all", "wpe"});
  if (c.train.trainable == "wpe" && c.model.position != "learned")
    fail("train.trainable", "wpe", "needs a learned table to train (model.position is " + c.model.position + ")");
  if (c.train.batch_size < 1) fail("train.batch_size", str(c.train.batch_size), "must be at least 1");
  if (c.train.grad_accum < 1) fail("train.grad_accum", str(c.train.grad_accum), "must be at least 1");
  if (c.run.batch_split > 1 && c.model.dropout > 0)
    fail("run.batch_split", str(c.run.batch_split), "must be 1 or auto when model.dropout > 0 (dropout draws from "
         "one generator shared by the threads, so the run would not repeat)");
  if (c.run.batch_split > c.train.batch_size)
    fail("run.batch_split", str(c.run.batch_split), "must be at most train.batch_size (" + str(c.train.batch_size) + ")");
  if (c.run.dist_timeout_s < 1)
    fail("run.dist_timeout_s", str(c.run.dist_timeout_s), "must be at least 1 (seconds a rank waits for the others)");
  if (c.train.max_steps < 1) fail("train.max_steps", str(c.train.max_steps), "must be at least 1");
  if (!(c.train.lr > 0.0)) fail("train.lr", str(c.train.lr), "must be > 0");
  if (!(c.train.min_lr >= 0.0 && c.train.min_lr <= c.train.lr))
    fail("train.min_lr", str(c.train.min_lr), "must be in [0, train.lr = " + str(c.train.lr) + "]");
  if (c.train.warmup_steps < 0) fail("train.warmup_steps", str(c.train.warmup_steps), "must be >= 0");
  if (!(c.train.weight_decay >= 0.0)) fail("train.weight_decay", str(c.train.weight_decay), "must be >= 0");
  if (!(c.train.beta1 >= 0.0 && c.train.beta1 < 1.0)) fail("train.beta1", str(c.train.beta1), "must be in [0, 1)");
  if (!(c.train.beta2 >= 0.0 && c.train.beta2 < 1.0)) fail("train.beta2", str(c.train.beta2), "must be in [0, 1)");
  if (!(c.train.grad_clip >= 0.0)) fail("train.grad_clip", str(c.train.grad_clip), "must be >= 0 (0 turns clipping off)");
  one_of("train.dtype", c.train.dtype, {"float32", "bfloat16", "auto"});
  one_of("train.on_nonfinite", c.train.on_nonfinite, {"stop", "skip"});
  if (c.train.eval_every < 1) fail("train.eval_every", str(c.train.eval_every), "must be at least 1");
  if (c.train.eval_batches < 1) fail("train.eval_batches", str(c.train.eval_batches), "must be at least 1");
  if (c.train.checkpoint_every < 1) fail("train.checkpoint_every", str(c.train.checkpoint_every), "must be at least 1");
  if (c.train.log_every < 1) fail("train.log_every", str(c.train.log_every), "must be at least 1");
  if (c.snapshot.every < 1) fail("snapshot.every", str(c.snapshot.every), "must be at least 1");
  if (c.run.name.empty()) fail("run.name", "''", "must not be empty");
  if (c.run.out_dir.empty()) fail("run.out_dir", "''", "must not be empty");
}

std::string to_yaml(const Config& cfg) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  std::vector<std::string> open;  // currently open nested sections
  for (const auto& f : fields()) {
    std::vector<std::string> parts;
    std::stringstream ss(f.key);
    for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
    const std::vector<std::string> sections(parts.begin(), parts.end() - 1);
    size_t common = 0;
    while (common < open.size() && common < sections.size() && open[common] == sections[common]) ++common;
    while (open.size() > common) { e << YAML::EndMap; open.pop_back(); }
    while (open.size() < sections.size()) {
      e << YAML::Key << sections[open.size()] << YAML::Value << YAML::BeginMap;
      open.push_back(sections[open.size()]);
    }
    e << YAML::Key << parts.back() << YAML::Value;
    f.emit(cfg, e);
  }
  while (!open.empty()) { e << YAML::EndMap; open.pop_back(); }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace poslab
