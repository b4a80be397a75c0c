// Reading a config: defaults, then a YAML file, then --set overrides, each key through the table of fields.h;
// validate.cpp checks the result (config.h).
#include "config/config.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "config/fields.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/near_words.h"
#include "util/utf8.h"
#include "util/whole_numbers.h"

namespace poslab {
namespace {

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "(empty)";
  YAML::Emitter e;
  e << YAML::Flow << n;
  return escaped_utf8(e.c_str());  // bytes that are no UTF-8 as \xHH: the terminal shows what was written
}

// nanoGPT's names for poslab's keys (configs/shakespeare_char.yaml is its baby GPT), read by a key's last part.
const std::map<std::string, std::string>& nanogpt_names() {
  static const std::map<std::string, std::string> names = {{"max_iters", "train.max_steps"},
                                                           {"learning_rate", "train.lr"},
                                                           {"eval_interval", "train.eval_every"},
                                                           {"eval_iters", "train.eval_batches"},
                                                           {"warmup_iters", "train.warmup_steps"},
                                                           {"log_interval", "train.log_every"},
                                                           {"gradient_accumulation_steps", "train.grad_accum"},
                                                           {"dataset", "data.corpus"}};
  return names;
}

// What to write instead of an unknown key: the keys it is a slip of (a letter or two, the section's dot or an
// underscore, a name shortened or run on, a key of another section, nanoGPT's name), else its section's keys, else
// the sections.
std::string unknown_key_hint(const std::string& key) {
  auto bare = [](std::string k) {  // "snapshot.every", "train.snapshot_every" → "snapshotevery", "trainsnapshotevery"
    k.erase(std::remove_if(k.begin(), k.end(), [](char c) { return c == '.' || c == '_'; }), k.end());
    return k;
  };
  const std::string b = bare(key);
  std::vector<std::string> near, section_keys, sections;
  const std::string section = key.substr(0, key.find('.'));
  const std::string name = key.substr(key.rfind('.') + 1);  // "dropout" of train.dropout
  if (const auto it = nanogpt_names().find(name); it != nanogpt_names().end()) near.push_back(it->second);
  for (const std::string& k : config_keys()) {
    const std::string bk = bare(k);
    const bool contains =
        bk.size() >= 5 && b.size() >= 5 && (b.find(bk) != std::string::npos || bk.find(b) != std::string::npos);
    const bool moved = k.substr(k.rfind('.') + 1) == name;  // model.dropout for train.dropout
    if ((edit_distance(b, bk) <= 2 || contains || moved) && std::find(near.begin(), near.end(), k) == near.end())
      near.push_back(k);
    if (k.rfind(section + ".", 0) == 0) section_keys.push_back(k);
    const std::string s = k.substr(0, k.find('.'));
    if (std::find(sections.begin(), sections.end(), s) == sections.end()) sections.push_back(s);
  }
  auto join = [](const std::vector<std::string>& v, const std::string& last) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i == 0 ? "" : i + 1 == v.size() ? last : ", ") + v[i];
    return out;
  };
  const std::string more = "; poslab config prints every key with its value, docs/cli.md says what each does";
  if (!near.empty() && near.size() <= 4) return "did you mean " + join(near, " or ") + "?" + more.substr(1);
  if (!section_keys.empty()) return "the keys of " + section + " are " + join(section_keys, " and ") + more;
  return "a key is SECTION.NAME, the sections being " + join(sections, " and ") + more;
}

// A whole number past its key's type (999999999999 for an int): what the key takes at the bound it crossed, as
// validate() says it ("must be at least 1" for a -99999999999 that must be positive), else that bound.
Error past_its_type(const ConfigField& f, const std::string& value, const std::string& source) {
  const std::string& bound = value[0] == '-' ? f.least : f.most;
  Config probe;
  f.set(probe, YAML::Node(bound));
  probe.origin[f.key] = source;
  std::string why = (value[0] == '-' ? "expected integer, at least " : "expected integer, at most ") + bound;
  try {
    validate(probe);
  } catch (const Error& e) {
    const std::string said = e.what(), at = ": " + f.key + " = " + bound + ": ";
    if (const size_t i = said.find(at); i != std::string::npos) why = said.substr(i + at.size());
  }
  return Error(source + ": " + f.key + " = " + value + ": " + why, "fix the value of " + f.key + " in " + source);
}

void set_field(Config& cfg, const std::string& key, const YAML::Node& value, const std::string& source) {
  const ConfigField* f = find_config_field(key);
  if (f == nullptr) throw Error(source + ": unknown config key '" + key + "'", unknown_key_hint(key));
  if (f->whole && value.IsScalar())
    if (const std::string octal = leading_zero(value.Scalar()); !octal.empty())
      throw Error(source + ": " + key + " = " + value.Scalar() + ": " + octal,
                  "fix the value of " + key + " in " + source);
  if ((!value.IsDefined() || value.IsNull()) && f->null_is_empty) {  // "init_from:": none, its default
    f->set(cfg, YAML::Node(std::string()));
    cfg.origin[key] = source;
    return;
  }
  if (f->real && value.IsScalar()) {  // yaml-cpp reads 1e-400 as 0: the value shown would be one nobody wrote
    errno = 0;
    if (std::strtod(value.Scalar().c_str(), nullptr) == 0.0 && errno == ERANGE)
      throw Error(source + ": " + key + " = " + describe(value) +
                      ": is closer to 0 than a double can hold (it would read as 0)",
                  "fix the value of " + key + " in " + source);
  }
  try {
    if (!value.IsDefined() || value.IsNull()) throw YAML::BadConversion(value.Mark());
    f->set(cfg, value);
  } catch (const YAML::Exception&) {
    const bool whole = value.IsScalar() && std::regex_match(value.Scalar(), std::regex("[-+]?[0-9]+"));
    if (whole && !f->most.empty()) throw past_its_type(*f, value.Scalar(), source);
    throw Error(source + ": " + key + " = " + describe(value) + ": expected " + f->type,
                "fix the value of " + key + " in " + source);
  }
  cfg.origin[key] = source;
}

// Walks a YAML map, descending into sections, and sets every leaf key; `given` holds the keys the file set so far
// (train.lr written dotted and again under train: would be taken twice, the last without a word).
void merge_map(Config& cfg, const YAML::Node& node, const std::string& prefix, const std::string& source,
               std::set<std::string>& given) {
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar())
      throw Error(source + ": a key under '" + (prefix.empty() ? "(top level)" : prefix) + "' is not a plain name",
                  "write keys as 'name: value'");
    const std::string name = kv.first.Scalar();
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    if (!seen.insert(name).second)  // YAML readers differ on which one wins; yaml-cpp says nothing
      throw Error(source + ": '" + key + "' appears twice", "keep one of them");
    if (kv.second.IsMap() && find_config_field(key) == nullptr && is_config_section(key)) {
      merge_map(cfg, kv.second, key, source, given);
    } else if (kv.second.IsNull() && find_config_field(key) == nullptr && is_config_section(key)) {
      continue;  // "snapshot:" with its keys commented out: no keys
    } else if (find_config_field(key) == nullptr && is_config_section(key)) {
      throw Error(source + ": '" + key + "' is a section and must be a map of keys",
                  "write it as '" + name + ":' followed by indented 'key: value' lines");
    } else {
      if (!given.insert(key).second)
        throw Error(source + ": '" + key + "' appears twice (once dotted, once in its section)", "keep one of them");
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
  if (has_second_document(text))  // YAML::Load reads the first and drops the rest
    throw Error(source + ": holds more than one YAML document (separated by --- or ...)",
                "a config is one document: merge them, or keep each in a file of its own");
  if (!root.IsDefined() || root.IsNull()) return;  // empty file: defaults only
  if (!root.IsMap())
    throw Error(source + ": the top level must be a map of sections (run, data, model, train, snapshot)",
                "write each section as 'train:' with its 'key: value' lines indented below; poslab config prints them "
                "all");
  std::set<std::string> given;
  merge_map(cfg, root, "", source, given);
}

Config with_default_origins() {
  Config cfg;
  for (const auto& k : config_keys()) cfg.origin[k] = "default";
  return cfg;
}

}  // namespace

// Whether YAML text holds a second document: content after a "---" or "..." marker line that follows content.
// yaml-cpp's LoadAll, which would count them, loops forever on some malformed text (fuzz_config found one:
// tests/fuzz/seeds/config/loadall_hang.yaml); a marker stands at the start of its line, so the lines tell.
bool has_second_document(const std::string& text) {
  bool content = false, ended = false;
  std::istringstream in(text);
  std::string line;
  auto marker = [&](const char* m) {
    return line.compare(0, 3, m) == 0 && (line.size() == 3 || line[3] == ' ' || line[3] == '\t');
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (marker("---") || marker("...")) {
      ended = ended || content;
      const size_t rest = line.find_first_not_of(" \t", 3);  // "--- a: 1" starts a document with content
      if (marker("---") && rest != std::string::npos && line[rest] != '#') {
        if (ended) return true;
        content = true;
      }
      continue;
    }
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#' || line[0] == '%') continue;  // blank, comment, directive
    if (ended) return true;
    content = true;
  }
  return false;
}

void apply_override(Config& cfg, const Override& o) {
  const std::string& assignment = o.assignment;
  // "--set train.lr=x: …" on the command line; "sweeps/x.yaml: variant v: train.lr=x: …" from a sweep file.
  const std::string named = o.source == "--set" ? "--set " + assignment : o.source + ": " + assignment;
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(named + ": expected section.key=value", "for example --set train.max_steps=50");
  const std::string key = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw Error(named + ": the value is not valid YAML: " + e.what(),
                "write the value as YAML: a number, a word, a quoted string or a list like [a.txt, b.txt]");
  }
  // On the command line, YAML reads "x #1" as x (a comment) and "!x y" as y (a tag): text of the value lost without
  // a word. (A sweep file's values come as yaml-cpp wrote them.)
  const std::string text = assignment.substr(eq + 1);
  bool comment = false;
  char quote = 0;  // within '…' or "…" a '#' is text
  for (size_t i = 0; i < text.size() && !comment; ++i) {
    if (quote != 0 && text[i] == quote)
      quote = 0;
    else if (quote == 0 && (text[i] == '\'' || text[i] == '"'))
      quote = text[i];
    else if (quote == 0 && text[i] == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t'))
      comment = true;
  }
  if ((!value.IsDefined() || value.IsNull()) && !is_utf8(text))  // a UTF-16 byte order mark: YAML reads no value
    throw Error(named.substr(0, named.size() - text.size()) + escaped_utf8(text) +
                    ": is not UTF-8 text (its stray bytes shown as \\xHH)",
                "write the value in UTF-8");
  const bool tag = value.IsDefined() && value.Tag().size() > 1 && value.Tag()[0] == '!';
  if (o.source == "--set" && (comment || tag))
    throw Error(named + ": YAML reads only part of this value (" +
                    (comment ? "a '#' after a space starts a comment" : "a word starting with '!' is a tag") + ")",
                value.IsSequence() ? "quote each item that holds it, e.g. --set '" + key + "=[\"a #1.txt\"]'"
                                   : "quote the value, e.g. --set '" + key + "=\"" + text + "\"'");
  if (find_config_field(key) == nullptr && is_config_section(key))
    throw Error(named + ": '" + key + "' is a section, not a key", "name a key, e.g. " + key + ".<key>=value");
  set_field(cfg, key, value, o.source);
  cfg.overridden.insert(key);
}

std::vector<Override> command_line_sets(const std::vector<std::string>& sets) {
  // One key given twice takes its last value, as a wrapper script's defaults followed by its caller's --set need;
  // said, not taken without a word.
  std::map<std::string, std::string> first;  // each key's assignment
  for (const std::string& s : sets) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) continue;  // apply_override says what is wrong with it
    const auto [given, fresh] = first.emplace(s.substr(0, eq), s);
    if (!fresh && given->second != s)
      spdlog::warn("--set {} is given twice (--set {}, then --set {}): the last is taken", given->first, given->second,
                   s);
    given->second = s;
  }
  return std::vector<Override>(sets.begin(), sets.end());
}

Config config_from_yaml(const std::string& yaml, const std::string& source_name) {
  Config cfg = with_default_origins();
  merge_yaml_text(cfg, yaml, source_name);
  validate(cfg);
  return cfg;
}

Config load_config(const std::string& path, const std::vector<Override>& overrides) {
  Config cfg = with_default_origins();
  if (!path.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw Error(path + ": config file not found", "pass an existing YAML file, e.g. configs/default.yaml");
    const std::string text = read_file(path);
    if (text.find('\0') != std::string::npos)  // a checkpoint, a table: YAML's error would be about an escape
      throw Error(path + ": binary data, not a YAML config",
                  "pass a YAML config, e.g. configs/default.yaml (poslab inspect describes a checkpoint)");
    try {
      merge_yaml_text(cfg, text, path);
    } catch (const Error& e) {  // a text file given as the config (a corpus): said, with where a corpus goes
      const std::string ext = std::filesystem::path(path).extension().string();
      if (ext == ".yaml" || ext == ".yml") throw;
      throw Error(e.what(), e.hint() + "; if " + path +
                                " is text to train on rather than a config, give it as the corpus: poslab train "
                                "configs/default.yaml --set data.corpus=" +
                                path);
    }
    // A config file names its run unless it says otherwise.
    if (cfg.origin["run.name"] == "default") {
      cfg.run.name = std::filesystem::path(path).stem().string();
      cfg.origin["run.name"] = "the name of " + path;
    }
  }
  for (const auto& o : overrides) apply_override(cfg, o);
  validate(cfg);
  return cfg;
}

}  // namespace poslab
