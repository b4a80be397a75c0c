// poslab's log lines on a terminal (util/log.h): a line too long continues under its message.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "util/log.h"
#include "util/wrap.h"

namespace poslab {
namespace {

TEST(Log, ALineTooLongContinuesUnderItsMessageBetweenItems) {
  // known answer: broken between " | " items, continuation lines at column 14 (after "HH:MM:SS info ")
  EXPECT_EQ(wrap_line_at("12:00:00 info step 10 | loss 2.5000 | lr 1.0e-03 | 45.0 ms", 40, 14),
            "12:00:00 info step 10 | loss 2.5000\n"
            "              lr 1.0e-03 | 45.0 ms");
  EXPECT_EQ(wrap_line_at("short | line", 40, 0), "short | line");  // within the width: as it is

  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_formatter(std::make_unique<TerminalLogFormatter>("%l %v", 40));
  spdlog::logger logger("test", sink);
  logger.info("snapshot step 100 | above noise 4 (34% of variance) | k90 53 | eff rank 41.9");
  logger.warn("short");
  logger.info("keys:\n  a.long.key: value | other (a file in a folder)\n  b: 1");  // each line on its own
  logger.info("ends in a newline\n");
  EXPECT_EQ(out.str(),
            "info snapshot step 100\n"
            "     above noise 4 (34% of variance)\n"
            "     k90 53 | eff rank 41.9\n"
            "warning short\n"
            "info keys:\n"
            "  a.long.key: value\n"
            "  other (a file in a folder)\n"
            "  b: 1\n"
            "info ends in a newline\n\n");
  // a copy (spdlog clones a sink's formatter) wraps the same way
  std::ostringstream again;
  auto copy = std::make_shared<spdlog::sinks::ostream_sink_mt>(again);
  copy->set_formatter(TerminalLogFormatter("%l %v", 40).clone());
  spdlog::logger("test2", copy).info("snapshot step 100 | above noise 4 (34% of variance) | k90 53 | eff rank 41.9");
  EXPECT_EQ(again.str(), "info snapshot step 100\n     above noise 4 (34% of variance)\n     k90 53 | eff rank 41.9\n");
  // Left as they are: a terminal too narrow for 30 columns beside the head, a pattern with text after the message.
  std::ostringstream narrow, after;
  auto n = std::make_shared<spdlog::sinks::ostream_sink_mt>(narrow);
  n->set_formatter(std::make_unique<TerminalLogFormatter>("%l %v", 30));
  spdlog::logger("narrow", n).info("snapshot step 100 | above noise 4 | k90 53 | eff rank 41.9");
  EXPECT_EQ(narrow.str(), "info snapshot step 100 | above noise 4 | k90 53 | eff rank 41.9\n");
  auto t = std::make_shared<spdlog::sinks::ostream_sink_mt>(after);
  t->set_formatter(std::make_unique<TerminalLogFormatter>("%v [%l]", 40));
  spdlog::logger("after", t).info("snapshot step 100 | above noise 4 | k90 53 | eff rank 41.9");
  EXPECT_EQ(after.str(), "snapshot step 100 | above noise 4 | k90 53 | eff rank 41.9 [info]\n");
}

}  // namespace
}  // namespace poslab
