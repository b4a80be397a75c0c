// Errors that carry what went wrong and what to do about it.
// Library code throws poslab::Error; only main() prints it and picks an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace poslab {

class Error : public std::runtime_error {
 public:
  // what: "<file or key>: <problem>"; hint: one sentence saying what to do (may be empty).
  explicit Error(const std::string& what, std::string hint = "") : std::runtime_error(what), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

// An error after which what the command wrote so far is its output all the same, and stays (gnuplot missing: the
// figures' data and scripts, to draw elsewhere). writing_into keeps the folder for it.
class KeptOutputError : public Error {
 public:
  using Error::Error;
};

}  // namespace poslab
