#include "cli/parse_errors.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/validators.h"
#include "run/run_folder.h"
#include "util/near_words.h"
#include "util/shell.h"
#include "util/text.h"

namespace poslab {
namespace {

// "Could not convert: --tokens = 1.5": the option and what it takes, in the words of poslab's own checks
// ("--tokens: must be a whole number, 0 or above, not '1.5'"); nullopt for any other error.
std::optional<std::string> wrong_kind(const CLI::App& cmd, const CLI::ParseError& e) {
  const std::string what = e.what(), lead = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (dynamic_cast<const CLI::ConversionError*>(&e) == nullptr || what.rfind(lead, 0) != 0 || eq == std::string::npos)
    return std::nullopt;
  const std::string name = what.substr(lead.size(), eq - lead.size());
  const CLI::Option* o = cmd.get_option_no_throw(name);
  // "INT", "INT:NUMBER > 0" (the type, then the checks' names)
  const std::string type = o != nullptr ? o->get_type_name() : "";
  const std::string base = type.substr(0, type.find(':'));
  std::string takes = base == "INT" || base == "UINT" ? "a whole number" : base == "FLOAT" ? "a number" : type;
  if (takes != type && type.find(">= 0") != std::string::npos) takes += ", 0 or above";
  if (takes != type && type.find("> 0") != std::string::npos && type.find(">= 0") == std::string::npos)
    takes += " above 0";
  if (takes.empty()) return std::nullopt;
  const std::string value = what.substr(eq + 3);
  // Digits alone that did not convert: a leading 0 (CLI11 reads it as octal, where 8 and 9 are no digits), else a
  // number past the option's type (within int64's range: a 32-bit option's)
  if ((base == "INT" || base == "UINT") && !value.empty() &&
      std::all_of(value.begin(), value.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (const std::string octal = leading_zero(value); !octal.empty()) return name + ": " + octal;
    errno = 0;
    const unsigned long long v = std::strtoull(value.c_str(), nullptr, 10);
    const bool int64 = errno != ERANGE && v <= static_cast<unsigned long long>(INT64_MAX);
    return name + ": " + value + " is too large" + (base == "INT" && int64 ? " (at most 2147483647)" : "");
  }
  return name + ": must be " + takes + ", not '" + value + "'";
}

// "--hlep", "-x"; "-", "-5" and "-.5" are no options.
bool looks_like_option(const std::string& w) {
  return w.size() > 1 && w[0] == '-' && !std::isdigit(static_cast<unsigned char>(w[1])) && w[1] != '.';
}

// Words a command does not take, as the user typed them (CLI11's message lists them backwards): an option mistyped,
// with the options it is likely a slip of (`hint`, before the help), else the words.
std::string unexpected(const CLI::App& cmd, const std::string& where, const std::vector<std::string>& extra,
                       std::string& hint) {
  const auto option = std::find_if(extra.begin(), extra.end(), looks_like_option);
  if (option == extra.end()) {
    std::string words;
    for (const std::string& w : extra) words += (words.empty() ? "" : " ") + w;
    return where + ": unexpected " + (extra.size() > 1 ? "arguments '" : "argument '") + words + "'";
  }
  const std::string typed = option->substr(0, option->find('='));
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd.get_options())
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
  const std::vector<std::string> near = near_words(typed, names, 4);
  if (!near.empty() && near.size() <= 3) hint = "did you mean " + either(near) + "? " + hint;
  return where + ": no option " + typed;
}

}  // namespace

int report_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  // Words CLI11 could not place: the command's, else those before its name (poslab's own).
  const std::vector<CLI::App*> named = app.get_subcommands();
  const CLI::App* cmd = named.empty() ? &app : named.front();
  std::vector<std::string> extra = cmd->remaining();
  if (extra.empty() && cmd != &app && !app.remaining().empty()) cmd = &app, extra = app.remaining();
  // The command's own options, else the list of commands.
  std::string hint = cmd == &app ? "poslab help lists the commands, poslab help COMMAND a command's options"
                                 : "poslab help " + cmd->get_name() + " lists its options";
  // Other errors (a value missing, a command missing) as CLI11 words them; so too where no command was named and no
  // word was left over.
  // A required argument missing beside a mistyped option ("eval --hlep"), or a value refused that a mistyped option
  // left for the command's argument ("train --stopat 5": 5 read as the config): the option is the slip to name.
  const bool slip = (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr ||
                     dynamic_cast<const CLI::ValidationError*>(&e) != nullptr) &&
                    std::any_of(extra.begin(), extra.end(), looks_like_option);
  const bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr || (cmd == &app && !extra.empty()) || slip;
  std::string error = e.what();
  // CLI11's own words for two slips, in poslab's: no command named; an option given more times than it takes.
  if (cmd == &app && error == "A subcommand is required") {
    error = "poslab: name a command (train, analyze, report, …)";
  } else if (const size_t at = error.find(": At Most 1 required but received "); at != std::string::npos) {
    error = error.substr(0, at) + ": given more than once (it takes one value)";
  }
  // A required argument not given ("checkpoint is required"): the command, and what the argument is.
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !slip && ends_with(error, " is required")) {
    const std::string name = error.substr(0, error.size() - 12);
    if (const CLI::Option* arg = cmd->get_option_no_throw(name); arg != nullptr && arg->get_positional())
      error = "poslab " + cmd->get_name() + ": no " + name + " given: " + arg->get_description();
  }
  if (std::optional<std::string> kind = wrong_kind(*cmd, e))
    error = *kind;
  else if (extras && !extra.empty())
    error = unexpected(*cmd, cmd == &app ? "poslab" : "poslab " + cmd->get_name(), extra, hint);
  // A path that is not there (validators.h): where a relative one was looked for, rather than the command's options.
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr && !slip &&
      error.find(": no such ") != std::string::npos) {
    std::error_code ec;
    hint = "check the path; a relative one is read from the folder poslab runs in (" +
           std::filesystem::current_path(ec).string() + ")";
  }
  // A run folder where a config goes: its config.yaml, or, to train, the resume of the run.
  if (const std::string tail = ": a run folder, not a file";
      dynamic_cast<const CLI::ValidationError*>(&e) != nullptr && ends_with(error, tail)) {
    const size_t from = error.find(": ") + 2;
    const std::string dir = error.substr(from, error.size() - tail.size() - from);
    const std::string config = shell_word(RunFolder(dir).config());
    hint = cmd->get_name() == "train"
               ? "to go on with that run: poslab train --resume " + shell_word(dir) +
                     "; a new run with its settings: poslab train " + config + " --set run.name=NEW_NAME"
           : cmd->get_name() == "sweep" ? "poslab sweep takes a sweep file (configs/sweeps/ holds examples)"
                                        : "its config is " + config;
  }
  std::cerr << "error: " << error << "\nhint: " << hint << "\n";
  return 2;
}

}  // namespace poslab
