// Checks of the subcommands' options that say what the option takes. CLI11's PositiveNumber and NonNegativeNumber
// print the double's whole range ("Value 0 not in range 0.000000 to 17976931348623157…"); its ExistingFile says
// "File does not exist" of a folder too.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "run/run_folder.h"
#include "util/near_words.h"
#include "util/whole_numbers.h"

namespace poslab {

// A whole number with a leading 0 (util/whole_numbers.h): said before CLI11 converts it. (A number option's check
// cannot tell a whole-number option from a decimal one, which would read 010 as 10: both refuse it.)
inline const CLI::Validator kNoLeadingZero = CLI::Validator(leading_zero, "");

// "0x10", "-0X1p3": strtod reads C's hexadecimal numbers, which a person writing a number does not mean.
inline bool hexadecimal(const std::string& s) { return s.find_first_of("xX") != std::string::npos; }

// A finite decimal number above 0 (positive) or at least 0.
inline CLI::Validator number_from(bool zero_too) {
  return CLI::Validator(
      [zero_too](std::string& s) -> std::string {
        if (std::string octal = leading_zero(s); !octal.empty()) return octal;
        if (hexadecimal(s)) return "write " + s + " as a decimal number";
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        const bool number = !s.empty() && end != nullptr && *end == '\0' && std::isfinite(v);
        if (number && (zero_too ? v >= 0 : v > 0)) return "";
        return std::string("must be a number ") + (zero_too ? "0 or above" : "above 0") + ", not '" + s + "'";
      },
      zero_too ? "NUMBER >= 0" : "NUMBER > 0");
}
inline const CLI::Validator kPositive = number_from(false);
inline const CLI::Validator kNonNegative = number_from(true);

// The name of a file or folder an option takes: an empty one names nothing, and a word that starts with '-'
// ("--force", "-h") is the next option, which CLI11 took for the name left out; "-" (stdout) passes.
inline const CLI::Validator kNotAnOption = CLI::Validator(
    [](std::string& s) -> std::string {
      if (s.empty()) return "expected a name, got an empty one";
      if (s.size() > 1 && s[0] == '-')
        return "expected a name, got the option " + s + " (the name is missing before it; a file so named: ./" + s +
               ")";
      return "";
    },
    "");

// A seed: a whole number from 0 to 2^63 − 1 (CLI11 wraps "-1" into an unsigned seed and clamps one too large).
inline const CLI::Validator kSeed = CLI::Validator(
    [](std::string& s) -> std::string {
      if (std::string octal = leading_zero(s); !octal.empty()) return octal;
      const bool digits = !s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos;
      if (digits && (s.size() < 19 || s <= "9223372036854775807")) return "";
      return "must be a whole number from 0 to 9223372036854775807, not '" + s + "'";
    },
    "SEED");

// A share: a number from 0 to 1 (CLI11's Range lets "nan" through: no comparison with it fails).
inline const CLI::Validator kShare = CLI::Validator(
    [](std::string& s) -> std::string {
      char* end = nullptr;
      if (hexadecimal(s)) return "write " + s + " as a decimal number";
      const double v = std::strtod(s.c_str(), &end);
      if (!s.empty() && end != nullptr && *end == '\0' && v >= 0 && v <= 1) return "";
      return "must be a number from 0 to 1, not '" + s + "'";
    },
    "NUMBER in [0, 1]");

// A run folder where a checkpoint goes stands for its latest checkpoint (as export takes it): "poslab sample
// runs/default". Anything else is left as given, for the command to read or to refuse.
inline const CLI::Validator kRunFolderToCheckpoint = CLI::Validator(
    [](std::string& s) -> std::string {
      std::error_code ec;
      if (std::filesystem::is_directory(s, ec) &&
          std::filesystem::is_regular_file(RunFolder(s).latest_checkpoint(), ec))
        s = RunFolder(s).latest_checkpoint();
      return "";
    },
    "");

// A path that exists: a file ("file"), a folder ("folder") or either ("path"). CLI11 puts the option's name first:
// "config: nosuch.yaml: no such file". A missing path names its near namesakes in its folder ("configs/defualt.yaml:
// no such file; did you mean configs/default.yaml?"); a checkpoint given for a run folder names the run folder.
inline CLI::Validator existing(const std::string& kind) {
  return CLI::Validator(
      [kind](std::string& s) -> std::string {
        namespace fs = std::filesystem;
        std::error_code ec;
        const auto st = fs::status(s, ec);
        if (!fs::exists(st)) {
          std::string out = s + ": no such " + (kind == "path" ? "file or folder" : kind);
          const fs::path p(s), dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
          std::vector<std::string> names;
          for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
            names.push_back(it->path().filename().string());
          std::sort(names.begin(), names.end());
          std::vector<std::string> near = near_words(p.filename().string(), names);
          if (!near.empty() && near.size() <= 3) {
            for (std::string& n : near) n = p.has_parent_path() ? (p.parent_path() / n).string() : n;
            out += "; did you mean " + either(near) + "?";
          }
          return out;
        }
        if (kind == "file" && fs::is_directory(st))  // a run folder is named so (report_parse_error's hint)
          return s + (fs::is_regular_file(RunFolder(s).config(), ec) ? ": a run folder, not a file"
                                                                     : ": a folder, not a file");
        if (kind == "folder" && !fs::is_directory(st)) {
          const fs::path p = fs::absolute(s, ec).lexically_normal();
          if (p.parent_path().filename() != "checkpoints") return s + ": a file, not a folder";
          // RUN_DIR/checkpoints/latest.pt: its run folder, as the user wrote the path where it names it
          fs::path run = fs::path(s).lexically_normal().parent_path().parent_path();
          if (run.empty()) run = p.parent_path().parent_path();
          return s + ": a checkpoint, not a run folder: pass the run folder, " + run.string();
        }
        return "";
      },
      kind == "path"   ? "PATH"
      : kind == "file" ? "FILE"
                       : "DIR");
}

}  // namespace poslab
