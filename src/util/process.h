// The processes poslab's files name (locks, temporaries, a tokenizer's training folder): this machine's name, and
// whether a pid of it names no process now.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace poslab {

// This machine's host name, "?" where the kernel does not say.
inline std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// Whether `pid` names no process of this machine now (its process gone); false for a live one, another user's too.
inline bool process_is_gone(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

}  // namespace poslab
