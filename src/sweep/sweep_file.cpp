// Reading a sweep file: its keys, its variants (the named ones crossed with the grid) and every run's config,
// checked before anything trains (sweep.h).
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "config/config.h"
#include "run/run_folder.h"
#include "sweep/sweep.h"
#include "util/error.h"
#include "util/near_words.h"
#include "util/whole_numbers.h"

namespace poslab {
namespace fs = std::filesystem;
namespace {

// The hint of a sweep file's misshapen value.
constexpr const char* kSweepExample =
    "the sweeps in configs/sweeps/ show each key's shape (docs/cli.md, \"Sweeps, seeds and comparisons\")";

const char* kSweepKeys = "name, base, seeds, set, grid, variants";

// A YAML value as one line of YAML text, as --set takes it ("none", "0.02", "[a.txt, b.txt]").
std::string yaml_text(const YAML::Node& n) {
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

// One of seeds: a whole number from 0 to 2^63 - 1, as run.seed takes it: said when the file is read, not when its
// run starts, hours into the sweep.
int64_t read_seed(const YAML::Node& x, const std::string& path) {
  const std::string text = x.IsScalar() ? x.Scalar() : yaml_text(x);
  const std::string where = path + ": seeds: " + text;
  if (const std::string octal = leading_zero(text); !octal.empty())
    throw Error(where + ": " + octal, "list each seed as 1, 2, 3");
  const bool digits = x.IsScalar() && !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  const long long v = digits ? std::strtoll(text.c_str(), nullptr, 10) : -1;
  if (!digits || errno == ERANGE)
    throw Error(
        where + ": expected a whole number from 0 to 9223372036854775807",
        text.rfind('-', 0) == 0 ? "a seed is 0 or more" : "list each seed as a whole number, e.g. seeds: [1, 2, 3]");
  return v;
}

// A value that must be text (a name, a path, a key): a list, a map or an empty value (~, which yaml-cpp would read as
// "null") is an error naming `where` and what it takes.
std::string text_of(const YAML::Node& v, const std::string& where, const std::string& expected) {
  if (v.IsScalar()) return v.Scalar();
  throw Error(where + ": expected " + expected + ", not " + (v.IsNull() ? std::string("an empty value") : yaml_text(v)),
              std::string("fix it; ") + kSweepExample);
}

// The overrides of a `set:` map, in file order; `where` names it in errors.
std::vector<std::pair<std::string, std::string>> read_sets(const YAML::Node& n, const std::string& where) {
  if (!n.IsMap())
    throw Error(where + ": expected a map of config keys to values, e.g. {train.max_steps: 300}", kSweepExample);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& kv : n)
    out.emplace_back(text_of(kv.first, where, "config keys (SECTION.NAME)"), yaml_text(kv.second));
  return out;
}

// A variant name safe as a folder name: letters, digits and ._- kept, anything else becomes '-'.
std::string folder_safe(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '-';
  return out;
}

void check_name(const std::string& name, const std::string& where) {
  if (name.empty() || name == "." || name == ".." || folder_safe(name) != name)
    throw Error(where + " = '" + name + "': not a folder name", "use letters, digits, '.', '_' and '-' only");
}

std::vector<std::string> as_override_list(const std::vector<std::pair<std::string, std::string>>& sets) {
  std::vector<std::string> out;
  for (const auto& [k, v] : sets) out.push_back(k + "=" + v);
  return out;
}

// The sweep's set: as overrides, each named by where the sweep file gives it ("x.yaml: set:").
std::vector<Override> set_overrides(const Sweep& s) {
  std::vector<Override> out;
  for (const std::string& o : as_override_list(s.sets)) out.emplace_back(o, s.file + ": set:");
  return out;
}

// The overrides of a variant's run: the sweep's set:, then the variant's own ("x.yaml: variant NAME").
std::vector<Override> variant_overrides(const Sweep& s, const SweepVariant& v) {
  std::vector<Override> out = set_overrides(s);
  for (const std::string& o : as_override_list(v.sets)) out.emplace_back(o, s.file + ": variant " + v.name);
  return out;
}

// A key given twice in one map, at any depth (yaml-cpp keeps one of them without a word); `where` is its path.
void check_no_repeated_keys(const YAML::Node& n, const std::string& path, const std::string& where) {
  if (n.IsSequence())
    for (size_t i = 0; i < n.size(); ++i) check_no_repeated_keys(n[i], path, where + "[" + std::to_string(i) + "]");
  if (!n.IsMap()) return;
  std::set<std::string> seen;
  for (const auto& kv : n) {
    if (!kv.first.IsScalar()) continue;  // read as a key later, and refused there
    const std::string key = where.empty() ? kv.first.Scalar() : where + "." + kv.first.Scalar();
    if (!seen.insert(kv.first.Scalar()).second) throw Error(path + ": '" + key + "' appears twice", "keep one of them");
    check_no_repeated_keys(kv.second, path, key);
  }
}

// The sweep file's YAML: one document, a map, each key once.
YAML::Node read_sweep_yaml(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  if (!in || fs::is_directory(path, ec)) throw Error(path + ": cannot read the sweep file", "check the path");
  std::ostringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    throw Error(path + ": not valid YAML: " + e.what(), "fix the sweep file");
  }
  if (has_second_document(text.str()))
    throw Error(path + ": holds more than one YAML document (separated by --- or ...)",
                "a sweep file is one document: merge them, or keep each in a file of its own");
  if (!root.IsMap()) throw Error(path + ": a sweep file is a YAML map", std::string("keys: ") + kSweepKeys);
  check_no_repeated_keys(root, path, "");
  return root;
}

// base: a config file, relative to the sweep file's folder.
std::string resolve_base(const YAML::Node& v, const std::string& path) {
  const std::string given = text_of(v, path + ": base", "the path of a config file");
  const fs::path base = given;
  const std::string resolved =
      (base.is_absolute() ? base : fs::path(path).parent_path() / base).lexically_normal().string();
  std::error_code ec;
  if (fs::is_directory(resolved, ec))
    throw Error(path + ": base = " + given + ": a folder (" + resolved + "), not a config file",
                "name the config every run starts from, e.g. base: ../small.yaml");
  if (!fs::is_regular_file(resolved, ec))
    throw Error(path + ": base = " + given + ": no such config file (" + resolved + ")",
                "base is relative to the sweep file's folder");
  if (fs::equivalent(resolved, path, ec))  // read as a config, the sweep file's own keys would be unknown ones
    throw Error(path + ": base = " + given + ": is this sweep file itself",
                "name the config every run starts from, e.g. base: ../small.yaml");
  return resolved;
}

// The keys other than grid and variants (name, base, seeds, set) into `s`; an unknown key is an error.
void read_top_level(const YAML::Node& root, const std::string& path, Sweep& s) {
  for (const auto& kv : root) {
    const std::string key = text_of(kv.first, path, "keys that are plain names");
    const YAML::Node& v = kv.second;
    if (key == "name") {
      s.name = text_of(v, path + ": name", "a name");
    } else if (key == "base") {
      s.base = resolve_base(v, path);
    } else if (key == "seeds") {
      if (!v.IsSequence() || v.size() == 0)
        throw Error(path + ": seeds: expected a non-empty list of integers, e.g. [1, 2, 3]", kSweepExample);
      for (const auto& x : v) s.seeds.push_back(read_seed(x, path));
      if (std::set<int64_t>(s.seeds.begin(), s.seeds.end()).size() != s.seeds.size())
        throw Error(path + ": seeds: " + yaml_text(v) + " repeats a seed", "list each seed once");
    } else if (key == "set") {
      s.sets = read_sets(v, path + ": set");
    } else if (key != "grid" && key != "variants") {
      const std::vector<std::string> near = near_words(key, {"name", "base", "seeds", "set", "grid", "variants"}, 3);
      throw Error(path + ": unknown key '" + key + "'",
                  (near.empty() ? "" : "did you mean " + either(near) + "? ") + "a sweep file has: " + kSweepKeys);
    }
  }
}

// variants: the named variants, in file order; one unnamed variant without overrides when there are none.
std::vector<SweepVariant> named_variants(const YAML::Node& root, const std::string& path) {
  std::vector<SweepVariant> named = {SweepVariant{}};
  if (const YAML::Node v = root["variants"]) {
    if (!v.IsSequence() || v.size() == 0)
      throw Error(path + ": variants: expected a non-empty list of {name, set}", kSweepExample);
    named.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string where = path + ": variants[" + std::to_string(i) + "]";
      if (!v[i].IsMap() || !v[i]["name"])
        throw Error(where + ": expected {name: NAME, set: {key: value, ...}}", kSweepExample);
      for (const auto& kv : v[i])
        if (const std::string k = text_of(kv.first, where, "the keys name and set"); k != "name" && k != "set")
          throw Error(where + ": unknown key '" + k + "'", "a variant has name and set");
      SweepVariant sv;
      sv.name = text_of(v[i]["name"], where + ".name", "a name");
      check_name(sv.name, where + ".name");
      if (v[i]["set"]) sv.sets = read_sets(v[i]["set"], where + ".set");
      named.push_back(sv);
    }
  }
  return named;
}

// grid: every combination of its lists, named KEY-VALUE_KEY-VALUE (the last part of each key); one unnamed point
// without overrides when there is no grid.
std::vector<SweepVariant> grid_points(const YAML::Node& root, const std::string& path) {
  std::vector<SweepVariant> points = {SweepVariant{}};
  if (const YAML::Node g = root["grid"]) {
    if (!g.IsMap() || g.size() == 0)
      throw Error(path + ": grid: expected a map of config keys to lists of values", kSweepExample);
    for (const auto& kv : g) {
      const std::string key = text_of(kv.first, path + ": grid", "config keys (SECTION.NAME)");
      if (!kv.second.IsSequence() || kv.second.size() == 0)
        throw Error(path + ": grid." + key + ": expected a non-empty list of values, e.g. [64, 128]", kSweepExample);
      const std::string short_key = key.substr(key.rfind('.') + 1);
      std::set<std::string> listed;
      for (const auto& value : kv.second)
        if (!listed.insert(yaml_text(value)).second)
          throw Error(path + ": grid." + key + ": " + yaml_text(value) + " is listed twice", "list each value once");
      std::vector<SweepVariant> next;
      for (const auto& p : points)
        for (const auto& value : kv.second) {
          SweepVariant q = p;
          const std::string text = yaml_text(value);
          q.name += (q.name.empty() ? "" : "_") + folder_safe(short_key + "-" + text);
          q.sets.emplace_back(key, text);
          next.push_back(q);
        }
      points = next;
    }
  }
  return points;
}

// Each named variant crossed with every grid point: NAMED_POINT, its overrides then the point's ("base" when both
// are unnamed). A key both set by a named variant and swept by the grid is an error: the grid's value would replace
// the variant's in every run without a word.
std::vector<SweepVariant> crossed(const std::vector<SweepVariant>& named, const std::vector<SweepVariant>& points,
                                  const std::string& path) {
  for (const auto& n : named)
    for (const auto& [key, value] : n.sets)
      for (const auto& [grid_key, grid_value] : points.front().sets)
        if (key == grid_key)
          throw Error(path + ": variant " + n.name + " sets " + key + " (" + value +
                          "), which grid: sweeps too: the "
                          "grid's values would replace it in every run of the variant",
                      "set " + key + " in one place: in the variants or in grid:");
  std::vector<SweepVariant> out;
  for (const auto& n : named)
    for (const auto& p : points) {
      SweepVariant v;
      v.name = n.name.empty() ? p.name : p.name.empty() ? n.name : n.name + "_" + p.name;
      if (v.name.empty()) v.name = "base";
      v.sets = n.sets;
      v.sets.insert(v.sets.end(), p.sets.begin(), p.sets.end());
      out.push_back(v);
    }
  return out;
}

// Distinct variant names, and every variant's config loads: an unknown key or an impossible value fails now, not
// hours in.
// What the sweep sets for each run itself: its seed (from seeds:) and its folder (SWEEP_DIR/VARIANT/seed-S). A
// setting of them would be replaced without a word (a variant named for seed 2 trained with seed 1).
void check_sweep_owned_keys(const std::vector<std::string>& overrides, bool out_dir_too, const std::string& where) {
  for (const std::string& o : overrides) {
    const std::string key = o.substr(0, o.find('='));
    if (key == "run.seed" || key == "run.name" || (out_dir_too && key == "run.out_dir"))
      throw Error(where + " sets " + key +
                      ", which the sweep sets for each run (the seed from seeds:, the folder "
                      "SWEEP_DIR/VARIANT/seed-S)",
                  key == "run.seed" ? "list the seeds in seeds: [...]"
                                    : "leave " + key +
                                          " out; run.out_dir of the base config or the sweep's set: "
                                          "places the whole sweep");
  }
}

void check_variants(const Sweep& s, const std::vector<std::string>& cli_sets) {
  check_sweep_owned_keys(as_override_list(s.sets), false, s.file + ": set:");
  for (const auto& v : s.variants)
    check_sweep_owned_keys(as_override_list(v.sets), true, s.file + ": variant " + v.name);
  std::set<std::string> names;
  for (const auto& v : s.variants)
    if (!names.insert(v.name).second)
      throw Error(s.file + ": two variants are named '" + v.name + "'", "give each variant its own name");
  std::map<std::string, const SweepVariant*> trains;  // each variant by its whole config, as to_yaml writes it
  for (const auto& v : s.variants) {
    Config c;
    try {
      std::vector<Override> o = variant_overrides(s, v);
      o.insert(o.end(), cli_sets.begin(), cli_sets.end());
      c = load_config(s.base, o);
    } catch (const Error& e) {
      // Its message names the sweep file where a value of the file is wrong; one of the base config's, the variant.
      const std::string what = e.what();
      if (what.rfind(s.file + ": ", 0) == 0) throw;
      throw Error(s.file + ": variant " + v.name + ": " + what, e.hint());
    }
    // Two variants that set one value spelled two ways (true and yes, 0.01 and 1e-2) would train one config twice
    // and compare it with itself. (Variants alike as written, controls of the same settings, are the file's choice;
    // two that a --set makes alike, sweep_runs names.)
    const auto [seen, fresh] = trains.emplace(to_yaml(c), &v);
    if (fresh) continue;
    std::set<std::string> given;  // the keys of --set
    for (const std::string& o : cli_sets) given.insert(o.substr(0, o.find('=')));
    std::string alike;
    for (const auto& [key, text] : v.sets)
      for (const auto& [other_key, other_text] : seen->second->sets)
        if (key == other_key && text != other_text && given.count(key) == 0)
          alike += (alike.empty() ? "" : "; ") + key + ": " + other_text + " and " + text;
    if (!alike.empty())
      throw Error(s.file + ": variants " + seen->second->name + " and " + v.name + " train the same config (" + alike +
                      " are the same value)",
                  "list each value once, spelled one way");
  }
}

}  // namespace

Sweep load_sweep(const std::string& path, const std::vector<std::string>& cli_sets) {
  const YAML::Node root = read_sweep_yaml(path);
  Sweep s;
  s.file = path;
  s.name = fs::path(path).stem().string();
  try {
    read_top_level(root, path, s);
    if (s.seeds.empty())
      throw Error(path + ": seeds: missing", "list the seeds of the repetitions, e.g. seeds: [1, 2, 3]");
    check_name(s.name, path + ": name");
    const std::vector<SweepVariant> named = named_variants(root, path);
    const std::vector<SweepVariant> points = grid_points(root, path);
    s.variants = crossed(named, points, path);
  } catch (const YAML::Exception& e) {
    throw Error(path + ": " + e.what(), std::string("a sweep file has: ") + kSweepKeys);
  }
  check_variants(s, cli_sets);
  return s;
}

std::string sweep_dir(const Sweep& sweep, const std::vector<std::string>& cli_sets) {
  // As its first variant's run has it (a variant sets no run.out_dir, but may make the --set values valid).
  std::vector<Override> o = variant_overrides(sweep, sweep.variants.at(0));
  o.insert(o.end(), cli_sets.begin(), cli_sets.end());
  return (fs::path(load_config(sweep.base, o).run.out_dir) / sweep.name).string();
}

// A --set reaches every run, over what a variant sets: each variant whose value it replaces is said, and two
// variants it makes the same run (the sweep's point lost without a word in the comparison) are an error.
void check_sets_keep_variants_apart(const Sweep& sweep, const std::vector<std::string>& cli_sets) {
  std::map<std::string, std::string> given;  // key -> the --set that gives it
  for (const std::string& o : cli_sets) given[o.substr(0, o.find('='))] = o;
  std::vector<std::map<std::string, std::string>> before, after;  // each variant's keys, the last value of each
  std::vector<std::pair<size_t, std::string>> replaced;           // variant, "--set K=V replaces variant X's K: V"
  for (const auto& v : sweep.variants) {
    std::map<std::string, std::string> own;
    for (const auto& [key, value] : v.sets) own[key] = value;
    std::map<std::string, std::string> left = own;
    for (const auto& [key, value] : own)
      if (const auto it = given.find(key); it != given.end()) {
        replaced.emplace_back(before.size(),
                              "--set " + it->second + " replaces variant " + v.name + "'s " + key + ": " + value);
        left.erase(key);
      }
    before.push_back(std::move(own));
    after.push_back(std::move(left));
  }
  for (size_t a = 0; a < before.size(); ++a)
    for (size_t b = a + 1; b < before.size(); ++b)
      if (before[a] != before[b] && after[a] == after[b]) {
        std::string what;
        for (const auto& [x, r] : replaced)
          if (x == a || x == b) what += (what.empty() ? "" : "; ") + r;
        throw Error(sweep.file + ": variants " + sweep.variants[a].name + " and " + sweep.variants[b].name +
                        " would be the same run (" + what + ")",
                    "leave that --set out (a sweep's --set reaches every run, over what its variants set), or sweep "
                    "a file without the variant it undoes");
      }
  for (const auto& r : replaced) spdlog::warn("{}", r.second);
}

std::vector<SweepRun> sweep_runs(const Sweep& sweep, const std::vector<std::string>& cli_sets) {
  check_sweep_owned_keys(cli_sets, false, "--set");
  check_sets_keep_variants_apart(sweep, cli_sets);
  const std::string dir = sweep_dir(sweep, cli_sets);
  std::vector<SweepRun> runs;
  for (int64_t seed : sweep.seeds)
    for (const auto& v : sweep.variants) {
      SweepRun r;
      r.variant = v.name;
      r.seed = seed;
      r.run_dir = sweep_run_dir(dir, v.name, seed);
      r.overrides = variant_overrides(sweep, v);
      r.overrides.insert(r.overrides.end(), cli_sets.begin(), cli_sets.end());  // from "--set"
      // What the sweep sets for each run itself.
      const std::string own = "the sweep " + sweep.file;
      r.overrides.emplace_back("run.seed=" + std::to_string(seed), own);
      r.overrides.emplace_back("run.out_dir=" + (fs::path(dir) / v.name).string(), own);
      r.overrides.emplace_back("run.name=" + sweep_run_name(seed), own);
      runs.push_back(r);
    }
  return runs;
}

}  // namespace poslab
