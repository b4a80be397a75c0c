// A folder's lock: "PID HOST" in a file; a live holder on this host is an error, a dead one's lock is taken over, one
// held on another host is left to its owner.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "test_util.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/lock.h"

namespace poslab {
namespace {

using test::error_of;
using test::TempDir;
namespace fs = std::filesystem;

std::string this_host() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

TEST(Lock, HoldsThePidAndHostAndIsGoneWithItsHolder) {
  TempDir dir;
  const std::string path = dir / "lock";
  {
    const RunLock lock(path);
    EXPECT_EQ(read_file(path), std::to_string(::getpid()) + " " + this_host() + "\n");
    EXPECT_EQ(error_of([&] { RunLock again(path, "sweep"); }),
              dir.str() + ": another sweep (pid " + std::to_string(::getpid()) + ") is using this sweep folder (" +
                  path + ") | wait for it to finish or stop it; if no such process runs, delete " + path);
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(Lock, ADeadHoldersLockIsTakenOverAndAnotherHostsIsLeftToIt) {
  TempDir dir;
  const std::string path = dir / "lock";
  const pid_t child = ::fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // a pid no process has now
  test::write_text(path, std::to_string(child) + " " + this_host() + "\n");
  {
    test::CapturedLog log;
    const RunLock lock(path);
    EXPECT_NE(
        log.str().find(path + ": stale lock of pid " + std::to_string(child) + " (no such process); taking it over"),
        std::string::npos)
        << log.str();
    EXPECT_EQ(read_file(path), std::to_string(::getpid()) + " " + this_host() + "\n");
  }
  // On a shared file system the pid means nothing here: the lock stays, its host named.
  test::write_text(path, "4242 otherhost\n");
  EXPECT_EQ(error_of([&] { RunLock lock(path); }), dir.str() + ": locked by pid 4242 on host otherhost (" + path +
                                                       ") | if that trainer is gone, delete " + path);
  EXPECT_EQ(read_file(path), "4242 otherhost\n");
}

}  // namespace
}  // namespace poslab
