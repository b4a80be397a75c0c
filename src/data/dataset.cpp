#include "data/dataset.h"

#include <signal.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "data/corpus.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/plural.h"
#include "util/process.h"

namespace poslab {
namespace fs = std::filesystem;
namespace {

// A token file: this magic, the count n (u64), n ids (i32), the CRC-32 of the ids' bytes (u32). The magic of files
// written before the checksum was kept ('…001') reads as out of date, not damaged.
constexpr char kTokensMagic[8] = {'P', 'L', 'T', 'O', 'K', '0', '0', '2'};
constexpr char kTokensMagicWithoutChecksum[8] = {'P', 'L', 'T', 'O', 'K', '0', '0', '1'};

uint32_t ids_crc(const char* bytes, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t at = 0; at < n;) {  // crc32 takes a uInt count
    const size_t part = std::min<size_t>(n - at, size_t{1} << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes + at), static_cast<uInt>(part));
    at += part;
  }
  return static_cast<uint32_t>(crc);
}

// The folder a tokenizer's training keeps its files in, in the cache (a copy of the corpus, the model sentencepiece
// writes): train-HOST-PID, so that a cache shared by machines tells whose each is.
std::string training_name() {
  std::string name = "train-" + host_name() + "-";
  for (char& c : name)
    if (c == '/') c = '_';
  return name + std::to_string(::getpid());
}

// A training killed before it took its files away (SIGKILL, a power cut) left them, a copy of the corpus among them:
// what a training of this machine whose process is gone left (its folder, or the files of a poslab that kept them
// beside the cache's, train-HOST-PID.*) goes.
void remove_dead_trainings(const std::string& dir) {
  const std::string mine = training_name(), prefix = mine.substr(0, mine.rfind('-') + 1);
  std::error_code ec;
  std::vector<fs::path> dead;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const size_t end_of_pid = name.find_first_not_of("0123456789", prefix.size());
    const size_t digits = (end_of_pid == std::string::npos ? name.size() : end_of_pid) - prefix.size();
    if (digits == 0 || digits > 9 || (end_of_pid != std::string::npos && name[end_of_pid] != '.')) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name.substr(prefix.size(), digits)));
    if (process_is_gone(pid)) dead.push_back(it->path());
  }
  std::string names;
  for (const fs::path& p : dead) {
    fs::remove_all(p, ec);
    names += (names.empty() ? "" : ", ") + p.filename().string();
  }
  if (!dead.empty()) spdlog::info("tokenizer: removed what a stopped training left in {}: {}", dir, names);
}

std::string encode_tokens_file(const std::vector<int32_t>& ids) {
  std::string out(kTokensMagic, sizeof kTokensMagic);
  const uint64_t n = ids.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int32_t));
  const uint32_t crc = ids_crc(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int32_t));
  out.append(reinterpret_cast<const char*>(&crc), sizeof crc);
  return out;
}

// Returns false (and leaves ids empty) when the file is absent or not a complete token file of ids below vocab: one
// that is there but damaged (cut short, overwritten, its ids changed on disk) is said in a warning.
bool decode_tokens_file(const std::string& path, int vocab, std::vector<int32_t>& ids) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  const std::string bytes = read_file(path);
  const auto damaged = [&](const std::string& why) {
    spdlog::warn("tokens: {} is damaged ({}); encoding the corpus again", path, why);
    ids.clear();
    return false;
  };
  uint32_t crc = 0;
  uint64_t n = 0;
  if (bytes.size() >= sizeof kTokensMagic &&
      std::memcmp(bytes.data(), kTokensMagicWithoutChecksum, sizeof kTokensMagic) == 0) {
    spdlog::info("tokens: {} was written by an older poslab (no checksum); encoding the corpus again", path);
    return false;
  }
  if (bytes.size() < sizeof kTokensMagic + sizeof n + sizeof crc ||
      std::memcmp(bytes.data(), kTokensMagic, sizeof kTokensMagic) != 0)
    return damaged("not a token file, or cut short before its first id");
  std::memcpy(&n, bytes.data() + sizeof kTokensMagic, sizeof n);
  const size_t body = bytes.size() - sizeof kTokensMagic - sizeof n - sizeof crc;  // n * 4 would wrap for a damaged n
  if (body % sizeof(int32_t) != 0 || body / sizeof(int32_t) != n)
    return damaged(fmt::format("{} bytes of ids where its count says {}: cut short or overwritten", body, n));
  const char* at = bytes.data() + sizeof kTokensMagic + sizeof n;
  std::memcpy(&crc, at + body, sizeof crc);
  if (ids_crc(at, body) != crc) return damaged("its ids do not match their CRC-32: changed on disk");
  ids.resize(n);
  std::memcpy(ids.data(), at, body);
  const auto bad = std::find_if(ids.begin(), ids.end(), [vocab](int32_t id) { return id < 0 || id >= vocab; });
  if (bad == ids.end()) return true;
  return damaged(fmt::format("id {} at {}, outside the tokenizer's {} pieces", *bad, bad - ids.begin(), vocab));
}

// Number of distinct code points: the vocabulary a char tokenizer needs (plus unk and newline pieces).
int distinct_chars(const std::string& text) {
  std::vector<bool> seen;
  int count = 0;
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = text[i];
    const size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len && i + k < text.size(); ++k) cp = (cp << 6) | (text[i + k] & 0x3F);
    i += len;
    if (cp == '\n' || cp == '\t') continue;  // sentencepiece makes no piece of a tab: it is a byte piece
    if (cp == 0x2424) continue;              // ␤ is the newline piece (kNewlinePiece), counted apart
    if (cp == 0x2581) cp = ' ';              // ▁ is sentencepiece's own space: one piece with ' '
    if (cp >= seen.size()) seen.resize(cp + 1, false);
    if (!seen[cp]) {
      seen[cp] = true;
      ++count;
    }
  }
  return count;
}

}  // namespace

std::string cache_dir(const Config& cfg) {
  if (!cfg.data.cache_dir.empty()) return cfg.data.cache_dir;
  if (const char* e = std::getenv("POSLAB_CACHE_DIR"); e && *e) return e;
  if (const char* e = std::getenv("XDG_CACHE_HOME"); e && *e) return (fs::path(e) / "poslab").string();
  if (const char* e = std::getenv("HOME"); e && *e) return (fs::path(e) / ".cache" / "poslab").string();
  return (fs::path(cfg.run.out_dir) / "cache").string();
}

void split_tokens(const std::vector<int32_t>& ids, double val_fraction, int block_size, const std::string& source,
                  std::vector<int32_t>& train, std::vector<int32_t>& val) {
  const size_t n_val = static_cast<size_t>(static_cast<double>(ids.size()) * val_fraction);
  const size_t n_train = ids.size() - n_val;
  const size_t need = static_cast<size_t>(block_size) + 1;
  if (n_train < need || n_val < need)
    throw Error(source + ": " + std::to_string(ids.size()) + " tokens split into " + std::to_string(n_train) +
                    " train and " + std::to_string(n_val) +
                    " val tokens; each split needs at least block_size + 1 = " + std::to_string(need),
                "add text to data.corpus, lower model.block_size, or change data.val_fraction");
  train.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n_train));
  val.assign(ids.begin() + static_cast<std::ptrdiff_t>(n_train), ids.end());
}

TokenData prepare_tokens(const Config& cfg, int threads, const Tokenizer* given) {
  const auto& tc = cfg.data.tokenizer;
  Corpus corpus = read_corpus(cfg.data.corpus);
  if (!corpus.skipped.empty()) {
    // Expected in a folder (fortune's .dat index files beside its texts): said, not warned about.
    spdlog::info("corpus: {} left out, not text (first: {}){}",
                 counted(static_cast<int64_t>(corpus.skipped.size()), "file"), corpus.skipped.front(),
                 corpus.skipped.size() > 1 ? "; SPDLOG_LEVEL=debug lists them all" : "");
    for (const auto& s : corpus.skipped) spdlog::debug("corpus: skipped {}", s);
  }
  if (corpus.replaced_bytes > 0)
    spdlog::warn("corpus: {} bytes of invalid UTF-8 replaced by U+FFFD, in {} (first: {})", corpus.replaced_bytes,
                 counted(static_cast<int64_t>(corpus.replaced_in.size()), "file"), corpus.replaced_in.front());
  spdlog::info("corpus: {}, {} of text", counted(static_cast<int64_t>(corpus.files.size()), "file"),
               corpus.text.size() >= 10000 ? fmt::format("{:.2f} MB", corpus.text.size() / 1e6)
                                           : counted(static_cast<int64_t>(corpus.text.size()), "byte"));

  const std::string dir = cache_dir(cfg);
  make_dirs(dir, "set data.cache_dir (or the environment's POSLAB_CACHE_DIR) to a writable folder");
  const std::string corpus_key = content_hash(corpus.text);
  TokenData data;
  data.corpus_hash = corpus_key;

  // Tokenizer: an explicit .model, a cached one, or a fresh one trained on the corpus.
  if (given != nullptr) {
    data.tokenizer = *given;
  } else if (!tc.model.empty()) {
    try {
      data.tokenizer = Tokenizer::from_file(tc.model);
    } catch (const Error& e) {
      throw Error(origin_prefix(cfg, "data.tokenizer.model") + "data.tokenizer.model = " + e.what(), e.hint());
    }
    spdlog::info("tokenizer: loaded {} ({} pieces)", tc.model, data.tokenizer.vocab_size());
  } else {
    // char: each character of the corpus, <unk>, the newline piece and the 256 byte pieces.
    const int vocab = tc.type == "char" ? distinct_chars(corpus.text) + 2 + 256 : tc.vocab_size;
    const std::string tok_key =
        "r" + std::to_string(kTokenizerRecipe) + "-" + tc.type + "-" + std::to_string(vocab) + "-" + corpus_key;
    const std::string model_path = (fs::path(dir) / ("tokenizer-" + tok_key + ".model")).string();
    std::error_code ec;
    if (fs::is_regular_file(model_path, ec)) {
      // Damaged or cut short: poslab wrote it, so the fix is to let poslab write it again. A model cut at the
      // end of a record can still parse, with fewer pieces than this corpus and vocabulary give: a mismatch too.
      const std::string fix = "delete it (rm " + model_path + "): the next run trains the tokenizer again";
      try {
        data.tokenizer = Tokenizer::from_file(model_path);
      } catch (const Error& e) {
        throw Error(std::string(e.what()) + " (a cached tokenizer)", fix);
      }
      if (data.tokenizer.vocab_size() != vocab)
        throw Error(model_path + ": a cached " + tc.type + " tokenizer with " +
                        std::to_string(data.tokenizer.vocab_size()) + " pieces where this corpus gives " +
                        std::to_string(vocab) + ": damaged",
                    fix);
      data.tokenizer_from_cache = true;
      spdlog::info("tokenizer: cached {} ({} pieces)", model_path, data.tokenizer.vocab_size());
    } else {
      remove_dead_trainings(dir);
      // In a folder of its own, as corpus.txt and tokenizer.model: the model records the names it was trained with.
      const fs::path work = fs::path(dir) / training_name();
      fs::create_directories(work, ec);
      const std::string text = (work / "corpus.txt").string();
      // sentencepiece leaves lines over its max_sentence_length (16384 bytes) out of training: wrap them.
      write_file_atomic(text, wrap_long_lines(corpus.text, 8192));
      std::string bytes;
      try {
        bytes = Tokenizer::train(text, (work / "tokenizer").string(), tc.type, vocab, threads);
      } catch (const Error& e) {  // the words name the key; the text file is a temporary copy of the corpus
        fs::remove_all(work, ec);
        const std::string what = e.what();
        const bool vocab = what.find("vocab_size") != std::string::npos;
        throw Error(origin_prefix(cfg, vocab ? "data.tokenizer.vocab_size" : "data.tokenizer.type") + what, e.hint());
      } catch (...) {
        fs::remove_all(work, ec);
        throw;
      }
      fs::remove_all(work, ec);
      write_file_atomic(model_path, bytes);
      data.tokenizer = Tokenizer::from_bytes(bytes, model_path);
      spdlog::info("tokenizer: trained {} with {} pieces -> {}", tc.type, data.tokenizer.vocab_size(), model_path);
    }
  }

  // Encoded corpus, keyed by corpus content and tokenizer.
  data.tokens_path =
      (fs::path(dir) / ("tokens-" + corpus_key + "-" + content_hash(data.tokenizer.model_bytes()) + ".bin")).string();
  std::vector<int32_t> ids;
  if (decode_tokens_file(data.tokens_path, data.tokenizer.vocab_size(), ids)) {
    data.tokens_from_cache = true;
    spdlog::info("tokens: cached {} ({} tokens)", data.tokens_path, grouped(static_cast<int64_t>(ids.size())));
  } else {
    const std::vector<int> encoded = data.tokenizer.encode(corpus.text);
    ids.assign(encoded.begin(), encoded.end());
    write_file_atomic(data.tokens_path, encode_tokens_file(ids));
    spdlog::info("tokens: encoded {} tokens ({:.2f} bytes/token) -> {}", grouped(static_cast<int64_t>(ids.size())),
                 static_cast<double>(corpus.text.size()) / std::max<size_t>(1, ids.size()), data.tokens_path);
  }
  std::string source = "data.corpus";
  if (cfg.data.corpus.size() == 1) source = cfg.data.corpus.front();
  split_tokens(ids, cfg.data.val_fraction, cfg.model.block_size, source, data.train, data.val);
  return data;
}

}  // namespace poslab
