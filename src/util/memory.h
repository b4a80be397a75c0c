// How much memory this process may still take, and byte counts for people.
#pragma once

#include <cstdint>
#include <string>

namespace poslab {

// The tightest of the limits on what this process may still allocate, and which one it is.
struct MemoryRoom {
  int64_t bytes = -1;  // -1: no limit found
  std::string limit;   // e.g. "the address-space limit (ulimit -v)", "the cgroup's limit (memory.max)"
};

// The smallest of: the address-space limit (RLIMIT_AS) less what the process has mapped; the cgroup's memory
// limit less what the cgroup uses (v2 memory.max, or v1 memory.limit_in_bytes); the machine's available memory
// (/proc/meminfo MemAvailable). The last two are shared by the `processes_here` processes of a run on this
// machine, so each gets its share of them.
MemoryRoom memory_room(int processes_here = 1);

// The room a GPU with `free` of `total` bytes free gives (cudaMemGetInfo's figures), named after `gpu` (e.g.
// util/cuda.h's summary); no limit when free is -1 (no GPU).
MemoryRoom gpu_memory_room(int64_t free, int64_t total, const std::string& gpu);

// Parsers of the files memory_room reads (tested on known text): MemAvailable from /proc/meminfo, VmSize from
// /proc/self/status (bytes; -1 when absent), a cgroup limit ("max" = -1).
int64_t meminfo_available(const std::string& meminfo);
int64_t status_vm_size(const std::string& status);
int64_t cgroup_limit(const std::string& text);

// The memory checks before a job (a run, a batch to score, a table to analyse) are skipped: POSLAB_NO_MEMORY_CHECK=1.
bool memory_check_skipped();

// What a check's hint adds where the room is the machine's available memory, which swap may stretch: "the need is a
// lower bound, and POSLAB_NO_MEMORY_CHECK=1 skips this check (swap may then carry it)"; "" for any other limit.
std::string memory_check_note(const MemoryRoom& room);

// Stops (poslab::Error) when `need` bytes are more than `room` (unless memory_check_skipped): "WHAT needs NEED but
// this process may use ROOM, LIMIT", with `hint` and memory_check_note's words after it.
void check_memory_fits(int64_t need, const std::string& what, const std::string& hint, const MemoryRoom& room);

// "620 GB", "1.3 GB", "85 MB", "512 KB", "12 B", up to EB (decimal units, 2 significant digits at least).
std::string format_bytes(int64_t bytes);

}  // namespace poslab
