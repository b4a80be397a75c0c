// Checks of the subcommands' numeric options that say what the option takes. CLI11's PositiveNumber and
// NonNegativeNumber print the double's whole range ("Value 0 not in range 0.000000 to 17976931348623157…").
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
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

}  // namespace poslab
