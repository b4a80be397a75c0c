#include "util/memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "util/error.h"
#include "util/fs.h"

namespace poslab {

namespace {

// A /proc or /sys file's text, "" when it is absent (no cgroup limit file, no /proc).
std::string read_small_file(const std::string& path) {
  try {
    return read_file(path);
  } catch (const Error&) {
    return "";
  }
}

// The value in kB after `key` in a /proc file ("MemAvailable:   1234 kB"), in bytes; -1 when absent.
int64_t proc_field_bytes(const std::string& text, const std::string& key) {
  size_t at = 0;
  if (text.compare(0, key.size() + 1, key + ":") != 0) {
    at = text.find("\n" + key + ":");
    if (at == std::string::npos) return -1;
    ++at;
  }
  long long kb = -1;
  if (std::sscanf(text.c_str() + at + key.size() + 1, "%lld", &kb) != 1 || kb < 0) return -1;
  return static_cast<int64_t>(kb) * 1024;
}

void take_smaller(MemoryRoom& room, int64_t bytes, const std::string& limit) {
  if (bytes < 0) return;
  if (room.bytes < 0 || bytes < room.bytes) room = MemoryRoom{bytes, limit};
}

}  // namespace

int64_t meminfo_available(const std::string& meminfo) { return proc_field_bytes(meminfo, "MemAvailable"); }

int64_t status_vm_size(const std::string& status) { return proc_field_bytes(status, "VmSize"); }

int64_t cgroup_limit(const std::string& text) {
  long long v = -1;
  if (text.rfind("max", 0) == 0 || std::sscanf(text.c_str(), "%lld", &v) != 1 || v < 0) return -1;
  // cgroup v1 writes "no limit" as the largest page-aligned 64-bit value.
  return v >= (1LL << 62) ? -1 : static_cast<int64_t>(v);
}

MemoryRoom memory_room(int processes_here) {
  const int64_t share = processes_here > 1 ? processes_here : 1;
  MemoryRoom room;
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const int64_t mapped = status_vm_size(read_small_file("/proc/self/status"));
    const int64_t cap = static_cast<int64_t>(as.rlim_cur);
    take_smaller(room, mapped >= 0 ? std::max<int64_t>(cap - mapped, 0) : cap,
                 "the address-space limit (ulimit -v " + std::to_string(cap / 1024) + ")");
  }
  struct Cgroup {
    const char* limit;
    const char* usage;
    const char* name;
  };
  for (const Cgroup& c : {Cgroup{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", "memory.max"},
                          Cgroup{"/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                 "/sys/fs/cgroup/memory/memory.usage_in_bytes", "memory.limit_in_bytes"}}) {
    const int64_t cap = cgroup_limit(read_small_file(c.limit));
    if (cap < 0) continue;
    const int64_t used = cgroup_limit(read_small_file(c.usage));
    take_smaller(room, std::max<int64_t>(cap - std::max<int64_t>(used, 0), 0) / share,
                 std::string("the cgroup's limit (") + c.name + " " + format_bytes(cap) + ")");
    break;
  }
  const int64_t available = meminfo_available(read_small_file("/proc/meminfo"));
  if (available >= 0) take_smaller(room, available / share, "the machine's available memory (MemAvailable)");
  if (share > 1 && !room.limit.empty() && room.limit.find("ulimit") == std::string::npos)
    room.limit += ", shared by the " + std::to_string(share) + " processes on this machine";
  return room;
}

MemoryRoom gpu_memory_room(int64_t free, int64_t total, const std::string& gpu) {
  if (free < 0) return {};
  return {free, "the free memory of the GPU (" + (gpu.empty() ? std::string("CUDA") : gpu) + ": " + format_bytes(free) +
                    " of " + format_bytes(total) + " free)"};
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000.0 && u < 6) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 || v >= 10.0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

bool memory_check_skipped() {
  const char* skip = std::getenv("POSLAB_NO_MEMORY_CHECK");
  return skip != nullptr && std::string(skip) == "1";
}

std::string memory_check_note(const MemoryRoom& room) {
  return room.limit.find("MemAvailable") != std::string::npos
             ? "the need is a lower bound, and POSLAB_NO_MEMORY_CHECK=1 skips this check (swap may then carry it)"
             : "";
}

void check_memory_fits(int64_t need, const std::string& what, const std::string& hint, const MemoryRoom& room) {
  if (memory_check_skipped() || room.bytes < 0 || need <= room.bytes) return;
  const std::string note = memory_check_note(room);
  throw Error(what + " needs " + format_bytes(need) + " but this process may use " + format_bytes(room.bytes) + ", " +
                  room.limit,
              hint + (note.empty() ? "" : "; " + note));
}

}  // namespace poslab
