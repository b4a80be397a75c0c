// Checks of the subcommands' options that say what the option takes. CLI11's PositiveNumber and NonNegativeNumber
// print the double's whole range ("Value 0 not in range 0.000000 to 17976931348623157…"); its ExistingFile says
// "File does not exist" of a folder too.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace poslab {

// A finite number above 0 (positive) or at least 0.
inline CLI::Validator number_from(bool zero_too) {
  return CLI::Validator(
      [zero_too](std::string& s) -> std::string {
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

// A seed: a whole number from 0 to 2^63 − 1 (CLI11 wraps "-1" into an unsigned seed and clamps one too large).
inline const CLI::Validator kSeed = CLI::Validator(
    [](std::string& s) -> std::string {
      const bool digits = !s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos;
      if (digits && (s.size() < 19 || s <= "9223372036854775807")) return "";
      return "must be a whole number from 0 to 9223372036854775807, not '" + s + "'";
    },
    "SEED");

// A share: a number from 0 to 1 (CLI11's Range lets "nan" through: no comparison with it fails).
inline const CLI::Validator kShare = CLI::Validator(
    [](std::string& s) -> std::string {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (!s.empty() && end != nullptr && *end == '\0' && v >= 0 && v <= 1) return "";
      return "must be a number from 0 to 1, not '" + s + "'";
    },
    "NUMBER in [0, 1]");

// A path that exists: a file ("file"), a folder ("folder") or either ("path"). CLI11 puts the option's name first:
// "config: nosuch.yaml: no such file".
inline CLI::Validator existing(const std::string& kind) {
  return CLI::Validator(
      [kind](std::string& s) -> std::string {
        std::error_code ec;
        const auto st = std::filesystem::status(s, ec);
        if (!std::filesystem::exists(st)) return s + ": no such " + (kind == "path" ? "file or folder" : kind);
        if (kind == "file" && std::filesystem::is_directory(st)) return s + ": a folder, not a file";
        if (kind == "folder" && !std::filesystem::is_directory(st)) return s + ": a file, not a folder";
        return "";
      },
      kind == "path"   ? "PATH"
      : kind == "file" ? "FILE"
                       : "DIR");
}

}  // namespace poslab
