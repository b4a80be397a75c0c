// UTF-8 checked: valid text kept as it is, each bad byte replaced and counted.
#include <gtest/gtest.h>

#include "util/utf8.h"

namespace poslab {
namespace {

TEST(Utf8, SanitizeKeepsValidTextAndReplacesBadBytes) {
  std::string ok = "plain ascii, caf\xC3\xA9, \xE2\x82\xAC, \xF0\x9F\x98\x80";
  const std::string copy = ok;
  EXPECT_EQ(sanitize_utf8(ok), 0u);
  EXPECT_EQ(ok, copy);

  std::string bad = std::string("a\xFF") + "b\xC3" + "c\xE0\x80\x80" + "d";  // stray, cut, overlong
  EXPECT_EQ(sanitize_utf8(bad), 5u);
  EXPECT_EQ(bad,
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD"
            "c\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
            "d");
  std::string surrogate = "\xED\xA0\x80";
  EXPECT_EQ(sanitize_utf8(surrogate), 3u);
}

}  // namespace
}  // namespace poslab
