#include "util/memory.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "test_util.h"
#include "util/fs.h"

namespace poslab {
namespace {

TEST(Memory, ParsesTheProcFilesAndCgroupLimits) {
  const std::string meminfo = "MemTotal:       24589056 kB\nMemFree:         1000 kB\nMemAvailable:   20000000 kB\n";
  EXPECT_EQ(meminfo_available(meminfo), 20000000LL * 1024);
  EXPECT_EQ(meminfo_available("MemAvailable: 7 kB\n"), 7 * 1024);  // the first line
  EXPECT_EQ(meminfo_available("MemTotal: 5 kB\n"), -1);
  EXPECT_EQ(meminfo_available(""), -1);
  EXPECT_EQ(status_vm_size("Name:\tposlab\nVmPeak:\t  900 kB\nVmSize:\t  812 kB\n"), 812 * 1024);
  EXPECT_EQ(cgroup_limit("max\n"), -1);
  EXPECT_EQ(cgroup_limit("1073741824\n"), 1073741824);
  EXPECT_EQ(cgroup_limit("9223372036854771712\n"), -1);  // cgroup v1's "no limit"
  EXPECT_EQ(cgroup_limit(""), -1);
}

TEST(Memory, FormatsBytesForPeople) {
  EXPECT_EQ(format_bytes(12), "12 B");
  EXPECT_EQ(format_bytes(1300000000), "1.3 GB");
  EXPECT_EQ(format_bytes(85000000), "85 MB");
  EXPECT_EQ(format_bytes(619700000000), "620 GB");
  EXPECT_EQ(format_bytes(8000000000000000000), "8.0 EB");  // int64's range ends at 9.2 EB
}

// Under an address-space limit (ulimit -v), the room is that limit less what the process has mapped, and the limit
// is named. Measured in a child process, so that the limit does not reach the tests that follow.
TEST(Memory, TheAddressSpaceLimitIsTheRoomUnderIt) {
  const test::ChildRun child = test::in_child([](int fd) {
    const int64_t mapped = status_vm_size(read_file("/proc/self/status"));
    const int64_t cap = mapped + (int64_t{3} << 20);  // 3 MiB above what is mapped now
    rlimit lim{static_cast<rlim_t>(cap), static_cast<rlim_t>(cap)};
    ::setrlimit(RLIMIT_AS, &lim);
    const MemoryRoom room = memory_room();
    const std::string out = std::to_string(room.bytes) + "|" + room.limit;
    (void)!::write(fd, out.data(), out.size());
  });
  const std::string& out = child.out;
  ASSERT_FALSE(out.empty());
  const int64_t room = std::stoll(out.substr(0, out.find('|')));
  EXPECT_GT(room, 0) << out;
  EXPECT_LE(room, int64_t{3} << 20) << out;
  EXPECT_NE(out.find("the address-space limit (ulimit -v "), std::string::npos) << out;
}

TEST(Memory, WithoutALimitTheRoomIsAtMostTheAvailableMemory) {
  const MemoryRoom one = memory_room(1);
  ASSERT_GT(one.bytes, 0) << "a Linux machine has /proc/meminfo";
  const MemoryRoom four = memory_room(4);
  EXPECT_LT(four.bytes, one.bytes);  // four processes share the machine's memory
  if (four.limit.find("ulimit") == std::string::npos && one.limit.find("ulimit") == std::string::npos) {
    EXPECT_NE(four.limit.find("shared by the 4 processes on this machine"), std::string::npos) << four.limit;
    // a quarter each (MemAvailable moves between the two reads, with other tests running beside this one; a split
    // by 2 or 3 would be 2 or 1.3 times it)
    EXPECT_NEAR(4.0 * static_cast<double>(four.bytes), static_cast<double>(one.bytes), 0.2 * one.bytes)
        << one.limit << " / " << four.limit;
  }
}

}  // namespace
}  // namespace poslab
