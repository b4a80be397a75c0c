// Every command's --help at the terminal's width: descriptions and footers wrapped, each option's value named for
// what it is (FILE, DIR, N, {cpu,cuda}) with its default after the description. CLI11 2.1 writes neither: its type
// column reads "INT:NUMBER > 0=20" (the type, the checks' names, the default) and its lines run on past any width.
#pragma once

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "util/wrap.h"

namespace poslab {

// The value an option takes, from CLI11's type name: its own ("KEY=VALUE") or a check's (FILE, DIR, PATH, SEED, a
// choice {a,b}) over CLI11's TEXT, INT, UINT and FLOAT; N for a whole number, NUMBER for any. The checks' other names
// (NUMBER > 0, NUMBER in [0, 1]) are the limits the option's error states.
inline std::string value_name(const std::string& type_name) {
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t colon = type_name.find(':', at);
    parts.push_back(type_name.substr(at, colon == std::string::npos ? std::string::npos : colon - at));
    if (colon == std::string::npos) break;
    at = colon + 1;
  }
  std::string checked;  // the last check that names a kind of value
  while (parts.size() > 1) {
    const std::string& p = parts.back();
    const bool kind = p == "FILE" || p == "DIR" || p == "PATH" || p == "SEED" || (!p.empty() && p.front() == '{');
    if (!kind && p.rfind("NUMBER", 0) != 0) break;  // part of the option's own name (BEGIN:END)
    if (kind && checked.empty()) checked = p;
    parts.pop_back();
  }
  std::string base = parts.front();
  for (size_t k = 1; k < parts.size(); ++k) base += ":" + parts[k];
  const bool generic = base == "TEXT" || base == "INT" || base == "UINT" || base == "FLOAT";
  if (!checked.empty() && generic) return checked;
  if (base == "INT" || base == "UINT") return "N";
  if (base == "FLOAT") return "NUMBER";
  return base;
}

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() : width_(terminal_width(STDOUT_FILENO)) { column_width(28); }

  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    const std::string left = "  " + make_option_name(opt, is_positional) + make_option_opts(opt);
    const size_t column = get_column_width();
    std::string out = left;
    if (display_width(left) + 1 > column)
      out += "\n" + std::string(column, ' ');
    else
      out += std::string(column - display_width(left), ' ');
    return out + wrap_text(make_option_desc(opt), width_, column) + "\n";
  }

  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_type_size() == 0) return "";  // a flag
    std::string out = " " + value_name(opt->get_type_name());
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
    if (opt->get_required()) out += " (required)";
    return out;
  }

  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string desc = opt->get_description();
    if (!opt->get_default_str().empty()) desc += " (default: " + opt->get_default_str() + ")";
    return desc;
  }

  std::string make_description(const CLI::App* app) const override {
    return wrap_text(CLI::Formatter::make_description(app), width_);
  }

  std::string make_footer(const CLI::App* app) const override {
    return wrap_text(CLI::Formatter::make_footer(app), width_);
  }

  // One blank line between parts: CLI11 adds a second before the footer where a hidden option's group follows.
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    std::string help = CLI::Formatter::make_help(app, std::move(name), mode);
    for (size_t at; (at = help.find("\n\n\n")) != std::string::npos;) help.erase(at, 1);
    return help;
  }

 private:
  size_t width_;
};

}  // namespace poslab
