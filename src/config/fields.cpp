#include "config/fields.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <type_traits>

namespace poslab {
namespace {

template <typename T>
void emit_value(YAML::Emitter& e, const T& v) {
  e << v;
}

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
ConfigField make_field(std::string key, std::string type, Get get) {
  ConfigField f;
  f.key = std::move(key);
  f.type = std::move(type);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    f.least = std::to_string(std::numeric_limits<T>::min());
    f.most = std::to_string(std::numeric_limits<T>::max());
    f.whole = true;
  }
  f.real = std::is_floating_point_v<T>;
  if constexpr (std::is_same_v<T, std::string>) {
    Config defaults;
    f.null_is_empty = get(defaults).empty();
  }
  f.set = [get](Config& c, const YAML::Node& n) {
    get(c) = n.as<T>();
    if constexpr (std::is_floating_point_v<T>)  // .inf and .nan are YAML numbers, and no key's value
      if (!std::isfinite(get(c))) throw YAML::BadConversion(n.Mark());
  };
  f.emit = [get](const Config& c, YAML::Emitter& e) { emit_value(e, get(const_cast<Config&>(c))); };
  return f;
}

// A run key that is "auto" (stored as 0) or a positive integer.
ConfigField auto_or_positive(const char* key, int RunConfig::*member) {
  ConfigField f;
  f.key = key;
  f.type = "auto or a positive integer";
  f.whole = true;
  f.set = [member](Config& c, const YAML::Node& n) {
    if (n.IsScalar() && n.Scalar() == "auto") {
      c.run.*member = 0;
    } else {
      c.run.*member = n.as<int>();
      if (c.run.*member <= 0) throw YAML::BadConversion(n.Mark());
    }
  };
  f.emit = [member](const Config& c, YAML::Emitter& e) {
    if (c.run.*member == 0)
      e << "auto";
    else
      e << c.run.*member;
  };
  return f;
}

// data.corpus: one path or a list of them; written as a list.
ConfigField corpus_field() {
  ConfigField corpus;
  corpus.key = "data.corpus";
  corpus.type = "a path or a list of paths";
  corpus.set = [](Config& c, const YAML::Node& n) {
    if (n.IsScalar()) {
      c.data.corpus = {n.as<std::string>()};
      return;
    }
    if (!n.IsSequence()) throw YAML::BadConversion(n.Mark());
    std::vector<std::string> paths;
    for (const YAML::Node& p : n) {  // each a path: an empty item (~) would read as the path "null"
      if (!p.IsScalar()) throw YAML::BadConversion(p.Mark());
      paths.push_back(p.Scalar());
    }
    c.data.corpus = paths;
  };
  corpus.emit = [](const Config& c, YAML::Emitter& e) { e << YAML::Flow << c.data.corpus << YAML::Block; };
  return corpus;
}

}  // namespace

#define POSLAB_FIELD(T, type, path) make_field<T>(#path, type, [](Config& c) -> T& { return c.path; })

const std::vector<ConfigField>& config_fields() {
  static const std::vector<ConfigField> table = {
      POSLAB_FIELD(std::string, "string", run.name),
      POSLAB_FIELD(std::string, "string", run.out_dir),
      POSLAB_FIELD(int64_t, "integer", run.seed),
      POSLAB_FIELD(std::string, "auto | cpu | cuda", run.device),
      auto_or_positive("run.threads", &RunConfig::threads),
      auto_or_positive("run.batch_split", &RunConfig::batch_split),
      POSLAB_FIELD(std::string, "auto | measure | default | libtorch | NAME=VALUE,…", run.kernels),
      POSLAB_FIELD(bool, "true | false", run.report),
      POSLAB_FIELD(bool, "true | false", run.tensorboard),
      POSLAB_FIELD(int, "integer (seconds)", run.dist_timeout_s),
      corpus_field(),
      POSLAB_FIELD(std::string, "bpe | unigram | char", data.tokenizer.type),
      POSLAB_FIELD(int, "integer", data.tokenizer.vocab_size),
      POSLAB_FIELD(std::string, "string (path)", data.tokenizer.model),
      POSLAB_FIELD(double, "finite number", data.val_fraction),
      POSLAB_FIELD(std::string, "string (path)", data.cache_dir),
      POSLAB_FIELD(int, "integer", model.n_layer),
      POSLAB_FIELD(int, "integer", model.n_head),
      POSLAB_FIELD(int, "integer", model.n_embd),
      POSLAB_FIELD(int, "integer", model.block_size),
      POSLAB_FIELD(double, "finite number", model.dropout),
      POSLAB_FIELD(bool, "true | false", model.bias),
      POSLAB_FIELD(std::string, "learned | sinusoidal | none", model.position),
      POSLAB_FIELD(std::string, "match | none", model.sinusoidal_scale),
      POSLAB_FIELD(double, "finite number", model.wpe_init_std),
      POSLAB_FIELD(int, "integer", model.extended_from),
      POSLAB_FIELD(std::string, "linear | cubic | nearest | copy | random", model.extend_method),
      POSLAB_FIELD(int, "integer", train.batch_size),
      POSLAB_FIELD(int, "integer", train.grad_accum),
      POSLAB_FIELD(int, "integer", train.max_steps),
      POSLAB_FIELD(double, "finite number", train.lr),
      POSLAB_FIELD(double, "finite number", train.min_lr),
      POSLAB_FIELD(int, "integer", train.warmup_steps),
      POSLAB_FIELD(double, "finite number", train.weight_decay),
      POSLAB_FIELD(bool, "true | false", train.decay_position_table),
      POSLAB_FIELD(double, "finite number", train.position_lr_scale),
      POSLAB_FIELD(double, "finite number", train.beta1),
      POSLAB_FIELD(double, "finite number", train.beta2),
      POSLAB_FIELD(double, "finite number", train.grad_clip),
      POSLAB_FIELD(std::string, "float32 | bfloat16 | auto", train.dtype),
      POSLAB_FIELD(std::string, "stop | skip", train.on_nonfinite),
      POSLAB_FIELD(std::string, "auto | poslab | fused", train.adamw),
      POSLAB_FIELD(bool, "true | false", train.tf32),
      POSLAB_FIELD(bool, "true | false", train.cuda_graph),
      POSLAB_FIELD(int, "integer", train.eval_every),
      POSLAB_FIELD(int, "integer", train.eval_batches),
      POSLAB_FIELD(int, "integer", train.checkpoint_every),
      POSLAB_FIELD(int, "integer", train.log_every),
      POSLAB_FIELD(std::string, "string (path of a checkpoint)", train.init_from),
      POSLAB_FIELD(std::string, "all | wpe", train.trainable),
      POSLAB_FIELD(int, "integer", snapshot.every),
  };
  return table;
}

#undef POSLAB_FIELD

const ConfigField* find_config_field(const std::string& key) {
  for (const auto& f : config_fields())
    if (f.key == key) return &f;
  return nullptr;
}

bool is_config_section(const std::string& prefix) {
  for (const auto& f : config_fields())
    if (f.key.rfind(prefix + ".", 0) == 0) return true;
  return false;
}

std::vector<std::string> config_keys() {
  std::vector<std::string> keys;
  for (const auto& f : config_fields()) keys.push_back(f.key);
  return keys;
}

std::string origin_of(const Config& c, const std::string& key) {
  const auto it = c.origin.find(key);
  return it == c.origin.end() ? std::string("default") : it->second;
}

bool is_untrained_extension(const Config& c) { return c.model.extended_from > 0 && c.train.init_from.empty(); }

std::string origin_words(const Config& c, const std::string& key) {
  const std::string o = origin_of(c, key);
  return o == "default" ? "poslab's default" : o;
}

std::string origin_prefix(const Config& c, const std::string& key) {
  const std::string o = origin_of(c, key);
  return o == "default" ? "" : o + ": ";
}

std::vector<ConfigChange> config_changes(const Config& from, const Config& to) {
  const auto text = [](const ConfigField& f, const Config& c) {
    YAML::Emitter e;
    e << YAML::Flow;  // a list on one line: [a, b]
    f.emit(c, e);
    return std::string(e.c_str());
  };
  std::vector<ConfigChange> changes;
  for (const auto& f : config_fields()) {
    std::string a = text(f, from), b = text(f, to);
    if (a != b) changes.push_back({f.key, std::move(a), std::move(b)});
  }
  return changes;
}

std::string to_yaml(const Config& cfg) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  std::vector<std::string> open;  // currently open nested sections
  for (const auto& f : config_fields()) {
    std::vector<std::string> parts;
    std::stringstream ss(f.key);
    for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
    const std::vector<std::string> sections(parts.begin(), parts.end() - 1);
    size_t common = 0;
    while (common < open.size() && common < sections.size() && open[common] == sections[common]) ++common;
    while (open.size() > common) {
      e << YAML::EndMap;
      open.pop_back();
    }
    while (open.size() < sections.size()) {
      e << YAML::Key << sections[open.size()] << YAML::Value << YAML::BeginMap;
      open.push_back(sections[open.size()]);
    }
    e << YAML::Key << parts.back() << YAML::Value;
    f.emit(cfg, e);
  }
  while (!open.empty()) {
    e << YAML::EndMap;
    open.pop_back();
  }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace poslab
