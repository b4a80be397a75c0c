// A folder's lock: "PID HOST BOOT_ID:TICKS" in a file; a live holder on this host is an error, a dead one's lock and
// one whose pid now names another process are taken over, one held on another host is left to its owner.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "test_util.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/lock.h"
#include "util/process.h"

namespace poslab {
namespace {

using test::error_of;
using test::TempDir;
namespace fs = std::filesystem;

// This process's "BOOT_ID:TICKS": the boot id and field 22 of /proc/self/stat (counted after the name's ")").
std::string my_stamp() {
  std::string boot, stat;
  std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), boot);
  std::getline(std::ifstream("/proc/self/stat"), stat);
  std::istringstream after(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) after >> field;
  return boot + ":" + field;
}

TEST(Lock, HoldsThePidAndHostAndIsGoneWithItsHolder) {
  TempDir dir;
  const std::string path = dir / "lock";
  {
    const RunLock lock(path);
    EXPECT_EQ(read_file(path), std::to_string(::getpid()) + " " + host_name() + " " + my_stamp() + "\n");
    EXPECT_EQ(error_of([&] { RunLock again(path, "sweep"); }),
              dir.str() + ": another sweep (pid " + std::to_string(::getpid()) + ") is using this sweep folder (" +
                  path + ") | wait for it to finish or stop it");
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(Lock, ADeadHoldersLockIsTakenOverAndAnotherHostsIsLeftToIt) {
  TempDir dir;
  const std::string path = dir / "lock";
  const pid_t child = test::dead_pid();
  test::write_text(path, std::to_string(child) + " " + host_name() + "\n");
  {
    test::CapturedLog log;
    const RunLock lock(path);
    EXPECT_NE(
        log.str().find(path + ": stale lock of pid " + std::to_string(child) + " (no such process); taking it over"),
        std::string::npos)
        << log.str();
    EXPECT_EQ(read_file(path), std::to_string(::getpid()) + " " + host_name() + " " + my_stamp() + "\n");
  }
  // On a shared file system the pid means nothing here: the lock stays, its host named.
  test::write_text(path, "4242 otherhost\n");
  EXPECT_EQ(error_of([&] { RunLock lock(path); }), dir.str() + ": locked by pid 4242 on host otherhost (" + path +
                                                       ") | if that trainer is gone, delete " + path);
  EXPECT_EQ(read_file(path), "4242 otherhost\n");
}

// A pid is reused: after a reboot, or once the kernel's pids wrap, a stale lock's pid may name a live process that is
// no trainer. The holder's start stamp tells them apart; a lock with no stamp is judged by its pid alone.
TEST(Lock, ALockWhosePidNowNamesAnotherProcessIsTakenOver) {
  TempDir dir;
  const std::string path = dir / "lock";
  const std::string mine = std::to_string(::getpid()) + " " + host_name();
  test::write_text(path, mine + " " + my_stamp() + "\n");
  EXPECT_NE(error_of([&] { RunLock lock(path); }).find("another trainer (pid " + std::to_string(::getpid()) + ")"),
            std::string::npos);
  test::write_text(path, mine + "\n");
  EXPECT_NE(error_of([&] { RunLock lock(path); }).find("another trainer"), std::string::npos);
  for (const std::string& other : {my_stamp() + "0", std::string("00000000-0000-0000-0000-000000000000:1")}) {
    test::write_text(path, mine + " " + other + "\n");
    test::CapturedLog log;
    {
      const RunLock lock(path);
      EXPECT_EQ(read_file(path), mine + " " + my_stamp() + "\n");
    }
    EXPECT_NE(log.str().find(path + ": stale lock of pid " + std::to_string(::getpid()) +
                             " (that pid is now another process's); taking it over"),
              std::string::npos)
        << other << "\n"
        << log.str();
  }
  EXPECT_FALSE(fs::exists(path));
}

// The lock is the file's flock, not its text: a holder whose text is not there yet (or was written over) still holds
// it, and the kernel lets it go when the holder dies, however it dies.
TEST(Lock, AHolderHoldsItWhateverItsFileSaysUntilItDies) {
  TempDir dir;
  const std::string path = dir / "lock";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const RunLock lock(path);
    [[maybe_unused]] const ssize_t n = ::write(ready[1], "x", 1);
    ::pause();  // until killed
    _exit(0);
  }
  ASSERT_GT(child, 0);
  char x = 0;
  ASSERT_EQ(::read(ready[0], &x, 1), 1);
  const pid_t dead = test::dead_pid();
  const std::string gone = std::to_string(dead) + " " + host_name() + "\n";
  for (const std::string& text : {std::string(), std::string("0\n"), gone}) {
    test::write_text(path, text);  // what a holder killed before writing its pid, or a hand, leaves
    EXPECT_NE(error_of([&] { RunLock lock(path); }).find(dir.str() + ": another trainer"), std::string::npos)
        << "'" << text << "'";
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  test::CapturedLog log;
  {
    const RunLock lock(path);
    EXPECT_EQ(read_file(path), std::to_string(::getpid()) + " " + host_name() + " " + my_stamp() + "\n");
  }
  EXPECT_NE(log.str().find("stale lock of pid " + std::to_string(dead) + " (no such process); taking it over"),
            std::string::npos)
      << log.str();
  EXPECT_FALSE(fs::exists(path));
  ::close(ready[0]);
  ::close(ready[1]);
}

// A holder takes away its own file only: a lock file put at its path by hand since (the holder's taken away, another
// written) is another's, and stays when the holder lets go.
TEST(Lock, AHolderTakesAwayItsOwnFileAndNoOther) {
  TempDir dir;
  const std::string path = dir / "lock";
  {
    const RunLock lock(path);
    fs::remove(path);
    test::write_text(path, "4242 otherhost\n");
  }
  EXPECT_EQ(read_file(path), "4242 otherhost\n");
}

}  // namespace
}  // namespace poslab
