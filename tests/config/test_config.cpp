#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>

#include "config/config.h"
#include "source_paths.h"
#include "test_util.h"
#include "util/error.h"

namespace poslab {
namespace {

using test::error_of;
using test::TempDir;
using test::write_text;

TEST(Config, DefaultsWithoutAFile) {
  const Config c = load_config("");
  EXPECT_EQ(c.model.position, "learned");
  EXPECT_DOUBLE_EQ(c.model.wpe_init_std, 0.02);
  EXPECT_TRUE(c.train.decay_position_table);
  EXPECT_EQ(c.run.threads, 0);
  EXPECT_EQ(c.origin.at("model.n_embd"), "default");
}

TEST(Config, FileListsOnlyWhatDiffersAndNamesTheRun) {
  TempDir dir;
  write_text(dir / "tiny.yaml", "model:\n  n_layer: 2\n  n_embd: 64\ntrain:\n  lr: 3e-4\n");
  const Config c = load_config(dir / "tiny.yaml");
  EXPECT_EQ(c.model.n_layer, 2);
  EXPECT_EQ(c.model.n_embd, 64);
  EXPECT_DOUBLE_EQ(c.train.lr, 3e-4);
  EXPECT_EQ(c.model.n_head, 4);  // untouched default
  EXPECT_EQ(c.run.name, "tiny");
  EXPECT_EQ(c.origin.at("model.n_layer"), dir / "tiny.yaml");
  // The name is the file's, not poslab's default: said so where the keys that differ are listed.
  EXPECT_EQ(origin_words(c, "run.name"), "the name of " + (dir / "tiny.yaml"));
  EXPECT_EQ(origin_words(load_config(dir / "tiny.yaml", {"run.name=x"}), "run.name"), "--set");
}

TEST(Config, SetOverridesApplyLastAndParseYaml) {
  TempDir dir;
  write_text(dir / "c.yaml", "train:\n  max_steps: 100\n");
  const Config c = load_config(dir / "c.yaml", {"train.max_steps=50", "data.corpus=[a.txt,b.txt]", "run.threads=3",
                                                "data.tokenizer.type=char", "model.bias=false"});
  EXPECT_EQ(c.train.max_steps, 50);
  EXPECT_EQ(c.data.corpus, (std::vector<std::string>{"a.txt", "b.txt"}));
  EXPECT_EQ(c.run.threads, 3);
  EXPECT_EQ(c.data.tokenizer.type, "char");
  EXPECT_FALSE(c.model.bias);
  EXPECT_EQ(c.origin.at("train.max_steps"), "--set");
}

TEST(Config, YamlRoundTripKeepsEveryValue) {
  Config a =
      load_config("", {"model.n_embd=96", "model.n_head=3", "train.lr=0.00123", "run.threads=2", "data.corpus=[x, y]"});
  const Config b = config_from_yaml(to_yaml(a), "round-trip");
  EXPECT_EQ(to_yaml(a), to_yaml(b));
  EXPECT_EQ(b.model.n_embd, 96);
  EXPECT_DOUBLE_EQ(b.train.lr, 0.00123);
  EXPECT_EQ(b.data.corpus.size(), 2u);
  EXPECT_NE(to_yaml(a).find("val_fraction: 0.1\n"), std::string::npos) << to_yaml(a);  // shortest decimal
  EXPECT_NE(to_yaml(a).find("grad_clip: 1.0\n"), std::string::npos) << to_yaml(a);
  for (const auto& key : config_keys()) {
    const auto leaf = key.substr(key.rfind('.') + 1);
    EXPECT_NE(to_yaml(a).find(leaf + ":"), std::string::npos) << key;
  }
}

// The keys whose values differ, in section order, each value as to_yaml writes it; none between a config and itself.
TEST(Config, ChangesNameEachKeyThatDiffersWithBothValues) {
  const Config a = load_config("", {"model.n_embd=96", "model.n_head=3", "data.corpus=[x, y]"});
  EXPECT_TRUE(config_changes(a, a).empty());
  EXPECT_TRUE(config_changes(a, config_from_yaml(to_yaml(a), "round-trip")).empty());
  const Config b = load_config("", {"model.n_embd=48", "model.n_head=3", "data.corpus=[x]", "train.lr=0.002"});
  const std::vector<ConfigChange> c = config_changes(a, b);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].key, "data.corpus");
  EXPECT_EQ(c[0].from, "[x, y]");
  EXPECT_EQ(c[0].to, "[x]");
  EXPECT_EQ(c[1].key, "model.n_embd");
  EXPECT_EQ(c[1].from, "96");
  EXPECT_EQ(c[1].to, "48");
  EXPECT_EQ(c[2].key, "train.lr");
  EXPECT_EQ(c[2].to, "0.002");
}

TEST(Config, UnknownKeyNamesKeyAndFile) {
  TempDir dir;
  write_text(dir / "bad.yaml", "model:\n  n_layers: 2\n");
  const std::string msg = error_of([&] { load_config(dir / "bad.yaml"); });
  EXPECT_NE(msg.find("model.n_layers"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad.yaml"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean model.n_layer?"), std::string::npos) << msg;
  EXPECT_NE(error_of([] { load_config("", {"trian.lr=1"}); }).find("trian.lr"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"bogus=1"}); }).find("bogus"), std::string::npos);
}

// The hint names the keys the unknown one is a slip of, else its section's keys, else the sections.
// An override's source names it in errors ("--set", or a sweep file's set: or variant), and an override is the key
// blamed when it clashes with a file's value, whatever its source.
TEST(Config, AnOverrideIsNamedByItsSourceAndBlamedBeforeAFile) {
  const std::string variant = "sweeps/x.yaml: variant heads-3";
  const std::string msg = error_of([&] { load_config("", {Override("model.n_head=3", variant)}); });
  EXPECT_EQ(msg, variant +
                     ": model.n_head = 3: must divide model.n_embd (128, poslab's default) | change model.n_head in " +
                     variant)
      << msg;
  EXPECT_EQ(error_of([&] {
              load_config("", {Override("model.n_embd=wide", variant)});
            }).rfind(variant + ": model.n_embd = wide: expected", 0),
            0u);
  EXPECT_EQ(error_of([&] {
              load_config("", {Override("model.n_embd", variant)});
            }).rfind(variant + ": model.n_embd: expected section.key=value", 0),
            0u);
  TempDir dir;
  write_text(dir / "heads.yaml", "model:\n  n_head: 3\n");
  const std::string clash = error_of([&] { load_config(dir / "heads.yaml", {Override("model.n_embd=100", variant)}); });
  EXPECT_EQ(clash.rfind(variant + ": model.n_embd = 100: ", 0), 0u) << clash;
  EXPECT_NE(clash.find("model.n_head (3, from " + (dir / "heads.yaml") + ")"), std::string::npos) << clash;
  const Config c = load_config("", {Override("train.lr=0.002", variant), "train.max_steps=5"});
  EXPECT_EQ(origin_of(c, "train.lr"), variant);
  EXPECT_EQ(origin_of(c, "train.max_steps"), "--set");
  EXPECT_EQ(c.overridden, (std::set<std::string>{"train.lr", "train.max_steps"}));
}

TEST(Config, UnknownKeyHintNamesTheNearestKeys) {
  auto hint = [](const std::string& set) {
    const std::string msg = error_of([&] { load_config("", {set}); });
    return msg.substr(msg.find(" | ") + 3);
  };
  EXPECT_EQ(hint("trian.lr=1").rfind("did you mean train.lr? ", 0), 0u) << hint("trian.lr=1");
  // The section's dot written as an underscore, under another section.
  EXPECT_EQ(hint("train.snapshot_every=5").rfind("did you mean snapshot.every? ", 0), 0u);
  EXPECT_EQ(hint("train.lrate=1").rfind("did you mean train.lr? ", 0), 0u);
  // A key under another section, and nanoGPT's names (its baby GPT is configs/shakespeare_char.yaml).
  EXPECT_EQ(hint("train.dropout=0.1").rfind("did you mean model.dropout? ", 0), 0u) << hint("train.dropout=0.1");
  EXPECT_EQ(hint("train.block_size=64").rfind("did you mean model.block_size? ", 0), 0u);
  EXPECT_EQ(hint("model.lr=1").rfind("did you mean train.lr? ", 0), 0u) << hint("model.lr=1");
  EXPECT_EQ(hint("train.seed=1").rfind("did you mean run.seed? ", 0), 0u) << hint("train.seed=1");
  EXPECT_EQ(hint("max_iters=5").rfind("did you mean train.max_steps? ", 0), 0u) << hint("max_iters=5");
  EXPECT_EQ(hint("train.learning_rate=1").rfind("did you mean train.lr? ", 0), 0u) << hint("train.learning_rate=1");
  EXPECT_EQ(hint("eval_interval=5").rfind("did you mean train.eval_every? ", 0), 0u);
  EXPECT_EQ(hint("gradient_accumulation_steps=2").rfind("did you mean train.grad_accum? ", 0), 0u);
  const std::string model = hint("model.colour=1");
  EXPECT_EQ(model.rfind("the keys of model are model.n_layer, model.n_head, ", 0), 0u) << model;
  EXPECT_NE(model.find(" and model.extend_method; "), std::string::npos) << model;
  EXPECT_EQ(model.find("train."), std::string::npos) << model;
  EXPECT_EQ(hint("bogus=1").rfind("a key is SECTION.NAME, the sections being run, data, model, train and snapshot", 0),
            0u)
      << hint("bogus=1");
  EXPECT_NE(hint("bogus=1").find("poslab config prints every key"), std::string::npos);
}

TEST(Config, WrongTypeNamesKeyValueAndFile) {
  TempDir dir;
  write_text(dir / "bad.yaml", "train:\n  batch_size: lots\n");
  const std::string msg = error_of([&] { load_config(dir / "bad.yaml"); });
  EXPECT_NE(msg.find("train.batch_size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lots"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad.yaml"), std::string::npos) << msg;
  EXPECT_NE(error_of([] { load_config("", {"model.bias=maybe"}); }).find("model.bias"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"run.threads=-2"}); }).find("run.threads"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"train.lr="}); }).find("train.lr"), std::string::npos);
  // YAML's infinities and NaN are numbers; no key takes one.
  for (const char* v : {"train.lr=.inf", "model.wpe_init_std=.inf", "train.grad_clip=-.inf", "model.dropout=.nan"}) {
    const std::string e = error_of([&] { load_config("", {v}); });
    EXPECT_NE(e.find("expected finite number"), std::string::npos) << v << ": " << e;
  }
  // A whole number past its key's type says the bound it crossed, or what the key takes there; other text does not.
  const std::string big = error_of([] { load_config("", {"train.max_steps=99999999999999"}); });
  EXPECT_NE(big.find("train.max_steps = 99999999999999: expected integer, at most 2147483647"), std::string::npos)
      << big;
  const std::string below = error_of([] { load_config("", {"train.max_steps=-99999999999999"}); });
  EXPECT_NE(below.find("--set: train.max_steps = -99999999999999: must be at least 1 |"), std::string::npos) << below;
  const std::string seed = error_of([] { load_config("", {"run.seed=99999999999999999999999"}); });
  EXPECT_NE(seed.find("run.seed = 99999999999999999999999: expected integer, at most 9223372036854775807"),
            std::string::npos)
      << seed;
  // Bytes that are no UTF-8 are shown as \xHH, in a file or a --set (whose YAML reads a UTF-16 mark as no value).
  const std::string bytes = error_of([] {
    load_config("", {"train.lr=\xFF"
                     "1"});
  });
  EXPECT_NE(bytes.find("--set: train.lr = \\xFF1: expected finite number"), std::string::npos) << bytes;
  const std::string mark = error_of([] {
    load_config("", {"train.lr=\xFF\xFE"
                     "1"});
  });
  EXPECT_NE(mark.find("--set train.lr=\\xFF\\xFE1: is not UTF-8 text"), std::string::npos) << mark;
  TempDir bytes_dir;
  test::write_text(bytes_dir / "bytes.yaml",
                   "train:\n  lr: \"\xFF"
                   "1\"\n");
  const std::string bytes_file = error_of([&] { load_config(bytes_dir / "bytes.yaml"); });
  EXPECT_NE(bytes_file.find("bytes.yaml: train.lr = \\xFF1: expected finite number"), std::string::npos) << bytes_file;
  const std::string word = error_of([] { load_config("", {"train.max_steps=many"}); });
  EXPECT_NE(word.find("train.max_steps = many: expected integer |"), std::string::npos) << word;
  // A number nearer 0 than a double holds is shown as written (yaml-cpp reads it as 0), in a file too; 0 is 0.
  const std::string tiny = error_of([] { load_config("", {"train.lr=1e-400"}); });
  EXPECT_NE(tiny.find("train.lr = 1e-400: is closer to 0 than a double can hold (it would read as 0)"),
            std::string::npos)
      << tiny;
  TempDir tiny_dir;
  write_text(tiny_dir / "tiny.yaml", "train:\n  weight_decay: 0.0e-999\n  grad_clip: 1e-400\n");
  const std::string in_file = error_of([&] { load_config(tiny_dir / "tiny.yaml"); });
  EXPECT_NE(in_file.find("tiny.yaml: train.grad_clip = 1e-400: is closer to 0"), std::string::npos) << in_file;
  EXPECT_EQ(load_config("", {"train.weight_decay=0e-999"}).train.weight_decay, 0.0);
  EXPECT_EQ(load_config("", {"run.name=1e-400"}).run.name, "1e-400");  // text, not a number
  // data.corpus: each path text; an empty item (~, which yaml-cpp reads as "null") or a list in the list is refused
  for (const char* v : {"data.corpus=[a.txt, ~]", "data.corpus=[a.txt, [b.txt]]", "data.corpus={a: 1}"}) {
    const std::string e = error_of([&] { load_config("", {v}); });
    EXPECT_NE(e.find("expected a path or a list of paths"), std::string::npos) << v << ": " << e;
  }
}

// A whole number with a leading 0: yaml-cpp reads 010 as octal (8; 08 as no number), as CLI11 would; a person means
// 10. Refused in a file and in --set, for every whole-number key and no other.
TEST(Config, AWholeNumberWithALeadingZeroIsRefused) {
  TempDir dir;
  write_text(dir / "octal.yaml", "train:\n  max_steps: 010\n");
  EXPECT_EQ(error_of([&] { load_config(dir / "octal.yaml"); }),
            dir / "octal.yaml" + ": train.max_steps = 010: write 010 without its leading 0 (a whole number with one " +
                "reads as octal) | fix the value of train.max_steps in " + dir / "octal.yaml");
  for (const char* set : {"train.max_steps=010", "run.seed=+07", "run.threads=08", "run.batch_split=010"}) {
    const std::string e = error_of([&] { load_config("", {set}); });
    EXPECT_NE(e.find("without its leading 0"), std::string::npos) << set << ": " << e;
  }
  EXPECT_EQ(load_config("", {"train.max_steps=10"}).train.max_steps, 10);
  EXPECT_NE(error_of([] { load_config("", {"train.max_steps=0"}); }).find("must be at least 1"), std::string::npos)
      << "0 alone is a number, read as 0";
  EXPECT_DOUBLE_EQ(load_config("", {"train.lr=0.010"}).train.lr, 0.01);
  EXPECT_EQ(load_config("", {"run.name=007"}).run.name, "007") << "a name is text";
}

// Every range check names its key, its value and the rule (the loop's intervals also guard a step % 0).
TEST(Config, EveryRangeCheckNamesKeyValueAndRule) {
  const std::vector<std::vector<std::string>> cases = {
      {"train.beta1=1", "train.beta1 = 1: must be in [0, 1)"},
      {"train.beta2=2", "train.beta2 = 2: must be in [0, 1)"},
      {"train.weight_decay=-1", "train.weight_decay = -1: must be >= 0"},
      {"train.warmup_steps=-1", "train.warmup_steps = -1: must be >= 0"},
      {"train.grad_clip=-1", "train.grad_clip = -1: must be >= 0 (0 turns clipping off)"},
      {"train.batch_size=0", "train.batch_size = 0: must be at least 1"},
      {"train.grad_accum=0", "train.grad_accum = 0: must be from 1 to 65536"},
      {"train.grad_accum=65537",
       "train.grad_accum = 65537: must be from 1 to 65536 (micro-batches a step; a larger "
       "step is a larger train.batch_size)"},
      {"run.threads=1025", "run.threads = 1025: must be auto or from 1 to 1024 (auto takes the machine's cores)"},
      {"train.max_steps=0", "train.max_steps = 0: must be at least 1"},
      {"train.eval_every=0", "train.eval_every = 0: must be at least 1"},
      {"train.eval_batches=0", "train.eval_batches = 0: must be at least 1"},
      {"train.checkpoint_every=0", "train.checkpoint_every = 0: must be at least 1"},
      {"train.log_every=0", "train.log_every = 0: must be at least 1"},
      {"snapshot.every=0", "snapshot.every = 0: must be at least 1"},
      {"model.n_layer=0", "model.n_layer = 0: must be at least 1"},
      {"model.wpe_init_std=-1", "model.wpe_init_std = -1: must be >= 0"},
      {"train.on_nonfinite=ignore", "train.on_nonfinite = ignore: must be one of stop, skip"},
      {"run.name=''", "run.name = '': must not be empty"},
      {"run.out_dir=''", "run.out_dir = '': must not be empty"},
      {"data.val_fraction=0", "data.val_fraction = 0: must be strictly between 0 and 1"},
      {"data.corpus=[]", "data.corpus = []: needs at least one file or folder"},
      // each side of a two-sided rule
      {"train.beta1=-0.1", "train.beta1 = -0.1: must be in [0, 1)"},
      {"train.beta2=-0.1", "train.beta2 = -0.1: must be in [0, 1)"},
      {"train.min_lr=-1", "train.min_lr = -1: must be in [0, train.lr = "},
      {"model.dropout=-0.1", "model.dropout = -0.1: must be in [0, 1)"},
      {"model.dropout=1", "model.dropout = 1: must be in [0, 1)"},
      {"data.val_fraction=1", "data.val_fraction = 1: must be strictly between 0 and 1"},
      {"data.tokenizer.vocab_size=15", "data.tokenizer.vocab_size = 15: must be between 16 and 65535"},
      {"data.tokenizer.vocab_size=65536", "data.tokenizer.vocab_size = 65536: must be between 16 and 65535"},
      {"model.n_head=0", "model.n_head = 0: must be at least 1"},
      {"train.max_steps=0x10", "train.max_steps = 0x10: write 0x10 as a decimal number"},
      {"model.n_embd=0", "model.n_embd = 0: must be at least 2"},
      {"model.n_embd=1", "model.n_embd = 1: must be at least 2: LayerNorm over one channel gives a constant"},
      {"train.lr=-1", "train.lr = -1: must be > 0"},
  };
  // A value YAML reads only part of: a comment, a tag. Quoted, it is read whole.
  EXPECT_EQ(error_of([] { load_config("", {"run.name=x #1"}); }),
            "--set run.name=x #1: YAML reads only part of this value (a '#' after a space starts a comment) | quote "
            "the value, e.g. --set 'run.name=\"x #1\"'");
  EXPECT_NE(error_of([] { load_config("", {"run.name=#x"}); }).find("a '#' after a space starts a comment"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"run.name=!x y"}); }).find("a word starting with '!' is a tag"),
            std::string::npos);
  EXPECT_EQ(load_config("", {"run.name=\"x #1\""}).run.name, "x #1");
  EXPECT_EQ(load_config("", {"data.corpus=[a#b.txt]"}).data.corpus.at(0), "a#b.txt");
  EXPECT_EQ(load_config("", {"data.corpus=[\"c #1/t.txt\", 'd #2.txt']"}).data.corpus.at(1), "d #2.txt");
  EXPECT_NE(error_of([] { load_config("", {"data.corpus=[a.txt] #b.txt"}); }).find("quote each item that holds it"),
            std::string::npos);
  // A sweep file's values (written by yaml-cpp from its own text) are its own: no command-line check.
  EXPECT_EQ(load_config("", {Override("run.name=x #1", "sweeps/s.yaml: variant v")}).run.name, "x");
  for (const auto& c : cases) {
    const std::string e = error_of([&] { load_config("", {c[0]}); });
    EXPECT_EQ(e.rfind("--set: " + c[1], 0), 0u) << c[0] << ": " << e;
  }
  // and the values at each rule's edge load
  for (const char* edge : {"data.tokenizer.vocab_size=16", "data.tokenizer.vocab_size=65535", "model.dropout=0",
                           "train.beta1=0", "train.beta2=0", "train.min_lr=0", "train.warmup_steps=0",
                           "train.weight_decay=0", "train.grad_clip=0", "train.grad_accum=65536", "run.threads=1024"})
    EXPECT_NO_THROW(load_config("", {edge})) << edge;
  // What a CUDA graph cannot replay is said by poslab config and a sweep's check, not only when training starts.
  const std::string graph = error_of([] { load_config("", {"train.cuda_graph=true", "model.dropout=0.1"}); });
  EXPECT_NE(graph.find("train.cuda_graph = true: needs model.dropout 0 (0.1, "), std::string::npos) << graph;
  EXPECT_NE(error_of([] {
              load_config("", {"train.cuda_graph=true", "train.adamw=poslab"});
            }).find("train.cuda_graph = true: needs train.adamw auto or fused (poslab, "),
            std::string::npos);
  EXPECT_NE(error_of([] {
              load_config("", {"train.cuda_graph=true", "run.device=cpu"});
            }).find("train.cuda_graph = true: a CUDA graph runs on a GPU, and run.device is cpu"),
            std::string::npos);
  EXPECT_TRUE(load_config("", {"train.cuda_graph=true"}).train.cuda_graph) << "run.device auto: the start decides";
  // A graph run's stored config resumed with --set run.device=cpu: the --set is named, as the key to change.
  TempDir dir;
  write_text(dir / "graph.yaml", "train:\n  cuda_graph: true\n");
  EXPECT_EQ(error_of([&] { load_config(dir / "graph.yaml", {"run.device=cpu"}); }),
            "--set: run.device = cpu: train.cuda_graph is true (true, from " + dir / "graph.yaml" +
                "), and a CUDA graph runs on a GPU | change run.device in --set");
  const std::string odd = error_of([] {
    load_config("", {"model.position=sinusoidal", "model.n_embd=33", "model.n_head=1"});
  });
  EXPECT_NE(odd.find("model.n_embd = 33: must be even for model.position = sinusoidal"), std::string::npos) << odd;
}

TEST(Config, ARepeatedKeyOrASecondDocumentIsAnError) {
  // YAML readers differ on which of two equal keys wins, and yaml-cpp reads only a file's first document: both were
  // taken without a word.
  TempDir dir;
  write_text(dir / "twice.yaml", "train:\n  lr: 0.1\n  lr: 0.2\n");
  EXPECT_NE(error_of([&] { load_config(dir / "twice.yaml"); }).find("twice.yaml: 'train.lr' appears twice"),
            std::string::npos);
  write_text(dir / "dotted.yaml", "train.lr: 0.1\ntrain:\n  lr: 0.2\n");
  EXPECT_NE(error_of([&] {
              load_config(dir / "dotted.yaml");
            }).find("dotted.yaml: 'train.lr' appears twice (once dotted, once in its section)"),
            std::string::npos);
  write_text(dir / "nested.yaml", "data: {tokenizer.type: char, tokenizer: {type: bpe}}\n");
  EXPECT_NE(error_of([&] { load_config(dir / "nested.yaml"); }).find("'data.tokenizer.type' appears twice"),
            std::string::npos);
  write_text(dir / "sections.yaml", "train:\n  lr: 0.1\nmodel:\n  n_layer: 2\ntrain:\n  max_steps: 5\n");
  EXPECT_NE(error_of([&] { load_config(dir / "sections.yaml"); }).find("'train' appears twice"), std::string::npos);
  for (const char* two : {"train:\n  lr: 0.1\n---\ntrain:\n  max_steps: 5\n", "train: {lr: 0.1}\n...\nrun: {seed: 2}\n",
                          "# c\n---\ntrain: {lr: 0.1}\n--- {run: {seed: 2}}\n"}) {
    write_text(dir / "two.yaml", two);
    EXPECT_NE(error_of([&] { load_config(dir / "two.yaml"); }).find("two.yaml: holds more than one YAML document"),
              std::string::npos)
        << two;
  }
  // one document, marked and commented: fine; "---" inside a text is no marker
  write_text(dir / "one.yaml", "%YAML 1.2\n# a config\n---\ntrain:\n  lr: 0.1\n...\n# the end\n");
  EXPECT_EQ(load_config(dir / "one.yaml").train.lr, 0.1);
  EXPECT_NO_THROW(config_from_yaml("run:\n  name: |\n    a --- b\n", "text.yaml"));
}

TEST(Config, ARunNameIsOneFolderName) {
  // run.name is a folder inside run.out_dir: no path of its own, nothing that leaves it.
  // A stored config (a run made before this rule) still loads: only a new run is held to it.
  for (const char* v : {"run.name=../../elsewhere", "run.name=a/b", "run.name=.", "run.name=..", "run.name=/tmp/x"}) {
    const Config c = load_config("", {v});
    const std::string e = error_of([&] { validate_new_run(c); });
    EXPECT_NE(e.find("run.name = "), std::string::npos) << v << ": " << e;
    EXPECT_NE(e.find("one folder name"), std::string::npos) << v << ": " << e;
  }
  EXPECT_NO_THROW(validate_new_run(load_config("", {"run.name=my-run_2.b"})));
  // A name taken from the config file's (..yaml gives "."): the hint names the file, and --set.
  TempDir dir;
  write_text(dir / "..yaml", "train:\n  max_steps: 10\n");
  const std::string file = error_of([&] { validate_new_run(load_config(dir / "..yaml")); });
  EXPECT_EQ(file.rfind("the name of " + (dir / "..yaml") + ": run.name = '.': ", 0), 0u) << file;
  EXPECT_NE(file.find(" | set run.name in " + (dir / "..yaml") + " or with --set run.name=NAME (or rename the file)"),
            std::string::npos)
      << file;
  // A name longer than a folder's name can be; a run.out_dir of "~", which no shell expanded.
  const std::string long_name =
      error_of([] { validate_new_run(load_config("", {"run.name=" + std::string(300, 'a')})); });
  EXPECT_NE(long_name.find("is 300 bytes long; a folder's name holds at most 255: shorten it"), std::string::npos)
      << long_name;
  EXPECT_NO_THROW(validate_new_run(load_config("", {"run.name=" + std::string(255, 'a')})));
  for (const char* home : {"run.out_dir=~/runs", "run.out_dir=~/"}) {
    const std::string e = error_of([&] { validate_new_run(load_config("", {home})); });
    EXPECT_NE(e.find("'~' is not the home folder in a config (only a shell expands it)"), std::string::npos) << e;
  }
  EXPECT_NO_THROW(validate_new_run(load_config("", {"run.out_dir=runs/~x"})));
  // and a new run's seed is 0 or more, as sample's and a sweep's are
  const std::string seed = error_of([] { validate_new_run(load_config("", {"run.seed=-1"})); });
  EXPECT_NE(seed.find("run.seed = -1: must be 0 or more"), std::string::npos) << seed;
  EXPECT_NO_THROW(validate_new_run(load_config("", {"run.seed=0"})));
}

// The names poslab records in its JSON files (the run's folder, its corpus, tokenizer and start) are UTF-8 text: one
// of other bytes is refused as the config loads, before anything is made, its bytes shown.
TEST(Config, NamesRecordedInJsonAreUtf8) {
  for (const char* key :
       {"run.name", "run.out_dir", "data.corpus", "data.cache_dir", "data.tokenizer.model", "train.init_from"}) {
    const std::string e = error_of([&] { load_config("", {std::string(key) + "=runs\xFFx"}); });
    EXPECT_EQ(e, "--set: " + std::string(key) +
                     " = 'runs\\xFFx': is not UTF-8 text (its stray bytes shown as \\xHH): poslab records it in its "
                     "JSON files, which hold UTF-8 alone; rename the folder or file to a UTF-8 name | change " +
                     key + " in --set");
  }
  const std::string second = error_of([] { load_config("", {"data.corpus=[a.txt, caf\xC3]"}); });
  EXPECT_NE(second.find("data.corpus = 'caf\\xC3'"), std::string::npos) << second;
  EXPECT_EQ(load_config("", {"run.name=caf\xC3\xA9-\xE2\x82\xAC"}).run.name, "caf\xC3\xA9-\xE2\x82\xAC");
}

// A checkpoint's stored config that breaks a rule is no file the user wrote: the hint says which checkpoint to use.
TEST(Config, AStoredConfigThatBreaksARuleSaysToUseAnotherCheckpoint) {
  Error e("", "");
  try {
    config_from_yaml("model: {n_head: 3}\n", "runs/x/checkpoints/latest.pt (stored config)");
    FAIL() << "no error";
  } catch (const Error& caught) {
    e = caught;
  }
  EXPECT_EQ(std::string(e.what()).rfind("runs/x/checkpoints/latest.pt (stored config): model.n_head = 3: must divide "
                                        "model.n_embd",
                                        0),
            0u)
      << e.what();
  EXPECT_EQ(e.hint(),
            "the checkpoint's own config breaks this rule (a checkpoint of another poslab, or one changed since it was "
            "written): use another checkpoint of the run (checkpoints/best.pt), or give model.n_head with --set where "
            "a resume may change it");
}

TEST(Config, ImpossibleValuesNameKeyValueAndSource) {
  TempDir dir;
  write_text(dir / "heads.yaml", "model:\n  n_embd: 100\n  n_head: 3\n");
  std::string msg = error_of([&] { load_config(dir / "heads.yaml"); });
  EXPECT_NE(msg.find("model.n_embd = 100"), std::string::npos) << msg;
  EXPECT_NE(msg.find("n_head (3, from "), std::string::npos) << msg;
  EXPECT_NE(msg.find("heads.yaml"), std::string::npos) << msg;
  // Of two keys that clash, the one chosen most directly (--set, then a file, then poslab's default) is named as the
  // one to change, and the other's value with where it came from.
  write_text(dir / "width.yaml", "model:\n  n_embd: 102\n");
  EXPECT_EQ(error_of([&] { load_config(dir / "width.yaml"); }),
            dir / "width.yaml" + ": model.n_embd = 102: must be divisible by model.n_head (4, poslab's default) | " +
                "change model.n_embd in " + dir / "width.yaml");
  EXPECT_EQ(error_of([&] { load_config(dir / "heads.yaml", {"model.n_embd=50"}); }),
            "--set: model.n_embd = 50: must be divisible by model.n_head (3, from " + dir / "heads.yaml" +
                ") | change model.n_embd in --set");
  EXPECT_EQ(error_of([] { load_config("", {"model.n_head=3"}); }),
            "--set: model.n_head = 3: must divide model.n_embd (128, poslab's default) | change model.n_head in --set");
  // A value nobody set is named as poslab's default, not as a source called "default".
  Config c = load_config("");
  c.model.n_head = 3;
  EXPECT_EQ(error_of([&] { validate(c); }),
            "model.n_embd = 128 (poslab's default): must be divisible by model.n_head (3, poslab's default) | set "
            "model.n_embd in your config or with --set model.n_embd=VALUE");

  msg = error_of([] { load_config("", {"model.block_size=1"}); });
  EXPECT_NE(msg.find("model.block_size = 1"), std::string::npos) << msg;
  // 3 positions would train, but no snapshot of a 3-row table can be analysed: refused before the run starts.
  msg = error_of([] { load_config("", {"model.block_size=3"}); });
  EXPECT_NE(msg.find("model.block_size = 3: must be at least 4: the position table's analysis needs 4 rows"),
            std::string::npos)
      << msg;
  EXPECT_EQ(load_config("", {"model.block_size=4"}).model.block_size, 4);
  EXPECT_NE(msg.find("--set"), std::string::npos) << msg;
  EXPECT_NE(error_of([] { load_config("", {"train.lr=0"}); }).find("train.lr = 0"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"train.lr=-1"}); }).find("train.lr"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"train.min_lr=1"}); }).find("train.min_lr"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"model.position=rotary"}); }).find("learned, sinusoidal, none"),
            std::string::npos);
  msg = error_of([] { load_config("", {"model.sinusoidal_scale=half"}); });
  EXPECT_NE(msg.find("model.sinusoidal_scale = half"), std::string::npos) << msg;
  EXPECT_NE(msg.find("match, none"), std::string::npos) << msg;
  EXPECT_NE(error_of([] { load_config("", {"train.dtype=float16"}); }).find("train.dtype"), std::string::npos);
  msg = error_of([] { load_config("", {"train.adamw=apex"}); });
  EXPECT_NE(msg.find("train.adamw = apex"), std::string::npos) << msg;
  EXPECT_NE(msg.find("auto, poslab, fused"), std::string::npos) << msg;
  EXPECT_NE(error_of([] { load_config("", {"train.tf32=maybe"}); }).find("train.tf32"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"data.val_fraction=1.5"}); }).find("data.val_fraction"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"model.dropout=1"}); }).find("model.dropout"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"data.tokenizer.vocab_size=5"}); }).find("vocab_size"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"run.device=tpu"}); }).find("run.device"), std::string::npos);
  EXPECT_NE(
      error_of([] { load_config("", {"run.dist_timeout_s=0"}); }).find("run.dist_timeout_s = 0: must be at least 1"),
      std::string::npos);
}

// The keys poslab extend and --init-from write: what a hand-edited config could get wrong.
TEST(Config, ExtensionAndInitFromKeysAreChecked) {
  const std::vector<Override> extended = {"model.block_size=256", "model.extended_from=128",
                                          "model.extend_method=cubic"};
  EXPECT_EQ(load_config("", extended).model.extended_from, 128);
  auto with = [&](const std::string& change) {
    std::vector<Override> o = extended;
    o.push_back(change);
    return error_of([&] { load_config("", o); });
  };
  EXPECT_NE(with("model.extended_from=256")
                .find("model.extended_from = 256: must be 0 (not extended) or a block_size "
                      "below model.block_size (256)"),
            std::string::npos);
  EXPECT_NE(with("model.extended_from=3").find("model.extended_from = 3: must be 0"), std::string::npos);
  EXPECT_NE(with("model.extend_method=spline").find("model.extend_method = spline: must be one of linear, cubic"),
            std::string::npos);
  EXPECT_NE(with("model.extended_from=0")
                .find("model.extend_method = 'cubic': is set by poslab extend together with "
                      "model.extended_from (0): both or neither"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { load_config("", {"train.trainable=mlp"}); }).find("train.trainable = mlp: must be one of all, wpe"),
      std::string::npos);
  EXPECT_NE(error_of([] {
              load_config("", {"train.trainable=wpe", "model.position=sinusoidal"});
            }).find("train.trainable = wpe: needs a learned table to train (model.position is sinusoidal)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              load_config("", {"train.position_lr_scale=0"});
            }).find("train.position_lr_scale = 0: must be a number above 0 (1: lr as the rest)"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"train.position_lr_scale=-2"}); }).find("train.position_lr_scale = -2"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              load_config("", {"train.position_lr_scale=10", "model.position=none"});
            }).find("train.position_lr_scale = 10: scales a learned table's learning rate; model.position is none"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(load_config("", {"train.position_lr_scale=10"}).train.position_lr_scale, 10.0);
}

// A key set away from its default that the config never reads is said (a warning each), naming where it was set and
// why it is not read; the same key where it is read, or left at its default, says nothing.
TEST(Config, KeysTheConfigNeverReadsAreSaid) {
  TempDir dir;
  write_text(dir / "sin.yaml", "model:\n  position: sinusoidal\n  wpe_init_std: 0.1\n");
  const std::vector<std::string> sin = unread_settings(load_config(dir / "sin.yaml"));
  ASSERT_EQ(sin.size(), 1u);
  EXPECT_EQ(sin[0], (dir / "sin.yaml") +
                        ": model.wpe_init_std = 0.1 is not read: it draws a learned table's start, "
                        "and model.position is sinusoidal; leave it out of this config");
  const auto said = [](std::vector<std::string> sets) {
    return unread_settings(load_config("", command_line_sets(sets)));
  };
  const auto one = [&](std::vector<std::string> sets, const std::string& key, const std::string& why) {
    const std::vector<std::string> w = said(sets);
    ASSERT_EQ(w.size(), 1u) << sets[0];
    EXPECT_EQ(w[0].rfind("--set: " + key + " = ", 0), 0u) << w[0];
    EXPECT_NE(w[0].find(why), std::string::npos) << w[0];
  };
  one({"model.sinusoidal_scale=none"}, "model.sinusoidal_scale", "model.position is learned");
  one({"train.decay_position_table=false", "model.position=none"}, "train.decay_position_table",
      "model.position is none");
  one({"train.decay_position_table=false", "train.weight_decay=0"}, "train.decay_position_table",
      "train.weight_decay is 0");
  one({"data.tokenizer.vocab_size=500", "data.tokenizer.type=char"}, "data.tokenizer.vocab_size",
      "a char tokenizer's pieces");
  one({"train.tf32=true", "run.device=cpu"}, "train.tf32", "run.device is cpu");
  EXPECT_EQ(said({"data.tokenizer.vocab_size=500", "data.tokenizer.type=unigram", "data.tokenizer.model=t.model"}),
            (std::vector<std::string>{
                "--set: data.tokenizer.type = unigram is not read: the tokenizer is read from data.tokenizer.model "
                "(t.model), whose type is its own; leave it out of this config",
                "--set: data.tokenizer.vocab_size = 500 is not read: the tokenizer is read from data.tokenizer.model "
                "(t.model), whose pieces are its own; leave it out of this config"}));
  // read where they are set, or left at their defaults: nothing said
  EXPECT_TRUE(said({"model.wpe_init_std=0.1", "train.decay_position_table=false", "train.tf32=true"}).empty());
  EXPECT_TRUE(
      said({"model.position=sinusoidal", "model.sinusoidal_scale=none", "data.tokenizer.vocab_size=500"}).empty());
  EXPECT_TRUE(said({"model.position=none", "data.tokenizer.type=char", "run.device=cpu"}).empty());
}

TEST(Config, MalformedFilesAndOverrides) {
  TempDir dir;
  // A key given twice on the command line takes its last value (a wrapper's defaults, then its caller's --set), and
  // says so; the same value twice says nothing.
  {
    test::CapturedLog log;
    EXPECT_EQ(load_config("", command_line_sets({"train.lr=0.01", "model.n_layer=2", "train.lr=0.02"})).train.lr, 0.02);
    EXPECT_NE(log.str().find("--set train.lr is given twice (--set train.lr=0.01, then --set train.lr=0.02): the last "
                             "is taken"),
              std::string::npos)
        << log.str();
  }
  {
    test::CapturedLog log;
    EXPECT_EQ(command_line_sets({"train.lr=0.01", "train.min_lr=0.001", "train.lr=0.01"}).size(), 3u);
    EXPECT_EQ(log.str(), "");
  }
  EXPECT_NE(error_of([&] { load_config(dir / "missing.yaml"); }).find("missing.yaml"), std::string::npos);
  write_text(dir / "broken.yaml", "model: [unclosed\n");
  EXPECT_NE(error_of([&] { load_config(dir / "broken.yaml"); }).find("not valid YAML"), std::string::npos);
  write_text(dir / "list.yaml", "- a\n- b\n");
  EXPECT_NE(error_of([&] { load_config(dir / "list.yaml"); }).find("top level"), std::string::npos);
  write_text(dir / "section.yaml", "model: 3\n");
  EXPECT_NE(error_of([&] { load_config(dir / "section.yaml"); }).find("'model' is a section"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"train.max_steps"}); }).find("section.key=value"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"train=3"}); }).find("section"), std::string::npos);
  write_text(dir / "key.yaml", "? [a, b]\n: 1\n");
  EXPECT_NE(error_of([&] { load_config(dir / "key.yaml"); }).find("not a plain name"), std::string::npos);
  // Text given as the config (a corpus, a README) is said to belong in data.corpus if it is text to train on.
  write_text(dir / "play.txt", "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak.\n");
  EXPECT_NE(error_of([&] { load_config(dir / "play.txt"); })
                .find("; if " + dir / "play.txt" +
                      " is text to train on rather than a config, give it as the corpus: poslab train "
                      "configs/default.yaml --set data.corpus=" +
                      dir / "play.txt"),
            std::string::npos);
  write_text(dir / "empty.yaml", "");
  EXPECT_EQ(load_config(dir / "empty.yaml").model.n_embd, ModelConfig{}.n_embd);
  // A section whose keys are all commented out holds no keys; an empty value of a path whose default is none is
  // that default. An empty value of any other key is still an error.
  write_text(dir / "commented.yaml",
             "snapshot:\n  # every: 50\ntrain:\n  init_from:\n  max_steps: 7\n"
             "data:\n  tokenizer: {model: null}\n  cache_dir: ~\n");
  const Config c = load_config(dir / "commented.yaml");
  EXPECT_EQ(c.snapshot.every, SnapshotConfig{}.every);
  EXPECT_EQ(c.train.max_steps, 7);
  EXPECT_EQ(c.train.init_from, "");
  EXPECT_EQ(c.data.tokenizer.model, "");
  EXPECT_EQ(c.data.cache_dir, "");
  EXPECT_NE(error_of([] { load_config("", {"train.dtype="}); }).find("train.dtype = (empty)"), std::string::npos);
  EXPECT_NE(error_of([] { load_config("", {"run.name="}); }).find("run.name = (empty)"), std::string::npos);
}

// "section.key=value" for every leaf of a YAML mapping (lists stay whole, in flow style).
void leaves(const YAML::Node& node, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& kv : node) {
    const std::string key = prefix + kv.first.as<std::string>();
    if (kv.second.IsMap()) {
      leaves(kv.second, key + ".", out);
    } else {
      YAML::Emitter e;
      e << YAML::Flow << kv.second;
      out.push_back(key + "=" + e.c_str());
    }
  }
}

// Every config in configs/ loads, finds its corpus in a clone (relative paths from the repository root; absolute
// ones are Debian packages that scripts/setup.sh installs), and lists only what differs from the defaults.
TEST(Config, EveryShippedConfigRunsFromACloneAndListsOnlyWhatDiffers) {
  const std::filesystem::path root = poslab::test::source_dir();
  int configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    ++configs;
    SCOPED_TRACE(entry.path().string());
    const Config cfg = load_config(entry.path().string());
    for (const auto& corpus : cfg.data.corpus) {
      const std::filesystem::path p = corpus;
      if (p.is_relative())
        EXPECT_TRUE(std::filesystem::exists(root / p)) << corpus << " is not in the repository";
      else
        EXPECT_EQ(corpus.rfind("/usr/share/", 0), 0u) << corpus << " is outside the repository and Debian's packages";
    }
    std::vector<std::string> settings;
    leaves(YAML::LoadFile(entry.path().string()), "", settings);
    const std::string defaults = to_yaml(load_config("", {"run.name=" + cfg.run.name}));
    for (const auto& setting : settings) {
      if (setting.rfind("run.name=", 0) == 0) continue;  // compared against the file's own name below
      // A setting that is invalid alone (n_head 12 without n_embd 768) changes something: it cannot repeat a default.
      std::string alone;
      try {
        alone = to_yaml(load_config("", {"run.name=" + cfg.run.name, setting}));
      } catch (const Error&) {
        continue;
      }
      EXPECT_NE(alone, defaults) << setting << " only repeats a default";
    }
    EXPECT_EQ(std::find_if(settings.begin(), settings.end(),
                           [&](const std::string& s) { return s == "run.name=" + entry.path().stem().string(); }),
              settings.end())
        << "run.name repeats the file's stem, which is the default name";
  }
  EXPECT_GE(configs, 2);
}

}  // namespace
}  // namespace poslab
