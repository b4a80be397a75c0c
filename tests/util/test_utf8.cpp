// UTF-8 checked: valid text kept as it is, each bad byte replaced and counted.
#include <gtest/gtest.h>

#include "util/json_text.h"
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

// A name that is no UTF-8, told and shown: each bad byte as \xHH, the valid characters as they are.
TEST(Utf8, ANameThatIsNoUtf8IsToldAndShownByItsBytes) {
  EXPECT_TRUE(is_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80"));
  EXPECT_TRUE(is_utf8(""));
  EXPECT_FALSE(is_utf8("n\xFFu"));
  EXPECT_FALSE(is_utf8("cut \xC3"));
  EXPECT_EQ(escaped_utf8("n\xFFu caf\xC3\xA9"), "n\\xFFu caf\xC3\xA9");
  EXPECT_EQ(escaped_utf8("c\xE0\x80\x80"), "c\\xE0\\x80\\x80");  // overlong: three bytes
  EXPECT_EQ(escaped_utf8("plain"), "plain");
}

// JSON text of a name that is no UTF-8 (a path of a file system that allows any byte): written with U+FFFD, where
// nlohmann's own dump() throws; valid text as dump() writes it.
TEST(Utf8, JsonTextOfANameThatIsNoUtf8ReplacesItsBadBytes) {
  const nlohmann::json j = {{"input", "/tmp/bad\xFFname/t.npy"}, {"rows", 16}, {"name", "caf\xC3\xA9"}};
  EXPECT_THROW(j.dump(), nlohmann::json::type_error);
  EXPECT_EQ(json_text(j), "{\"input\":\"/tmp/bad\xEF\xBF\xBDname/t.npy\",\"name\":\"caf\xC3\xA9\",\"rows\":16}");
  const nlohmann::json valid = {{"a", {1, 2}}, {"b", "caf\xC3\xA9"}};
  EXPECT_EQ(json_text(valid, 2), valid.dump(2));
  EXPECT_EQ(json_text(valid), valid.dump());
}

// JSON read back: what stops the parse and where, text cut short said so, or the kind of value that is no object.
TEST(Utf8, JsonObjectErrorSaysWhereTheTextStopsBeingJson) {
  nlohmann::json j;
  EXPECT_EQ(json_object_error("{\"a\": [1, 2]}", j), "");
  EXPECT_EQ(j, (nlohmann::json{{"a", {1, 2}}}));
  EXPECT_EQ(json_object_error("{\"a\": 1,\n \"b\": [1, ", j)
                .rfind("the text ends before the JSON does (cut short?): at "
                       "line 2, column 11: syntax error",
                       0),
            0u)
      << json_object_error("{\"a\": 1,\n \"b\": [1, ", j);
  EXPECT_EQ(json_object_error("{\"a\": 1}\n}", j).rfind("not JSON: at line 2, column 1: syntax error", 0), 0u)
      << json_object_error("{\"a\": 1}\n}", j);
  EXPECT_EQ(json_object_error("{\"a\": 1}}", j).rfind("not JSON: at line 1, column 9: syntax error", 0), 0u)
      << json_object_error("{\"a\": 1}}", j);  // a whole object, then more: not cut short
  EXPECT_EQ(json_object_error("{\"a\": \"ab", j).rfind("the text ends before the JSON does", 0), 0u)
      << json_object_error("{\"a\": \"ab", j);  // in a string
  EXPECT_EQ(json_object_error("{\"a\": tr", j).rfind("the text ends before the JSON does", 0), 0u)
      << json_object_error("{\"a\": tr", j);  // in a literal
  EXPECT_EQ(json_object_error("{a: 1}", j).rfind("not JSON: at line 1, column 2: syntax error", 0), 0u);
  EXPECT_EQ(json_object_error("[1]", j), "JSON, but an array, not an object");
  EXPECT_EQ(json_object_error("\"x\"", j), "JSON, but a string, not an object");
  EXPECT_EQ(json_object_error("null", j), "JSON, but null, not an object");
  EXPECT_EQ(json_object_error("3", j), "JSON, but a number, not an object");
  EXPECT_EQ(json_object_error("", j).rfind("the text ends before the JSON does", 0), 0u) << json_object_error("", j);
}

// Generated text on a terminal: ESC, BEL, CR, DEL and a C1 CSI become visible characters; newline, tab, accents and
// emoji stay; a bad byte is U+FFFD as in sanitize_utf8.
TEST(Utf8, TerminalSafeTextShowsControlsAsPictures) {
  std::string t = std::string("a\x1b[2Jb\x07\r\x7f\n\tcaf\xC3\xA9 \xF0\x9F\x98\x80 \xC2\x9B\xFF") + '\0';
  EXPECT_EQ(make_terminal_safe(t), 7u);
  EXPECT_EQ(t,
            "a\xE2\x90\x9B[2Jb\xE2\x90\x87\xE2\x90\x8D\xE2\x90\xA1\n\tcaf\xC3\xA9 \xF0\x9F\x98\x80 "
            "\xEF\xBF\xBD\xEF\xBF\xBD\xE2\x90\x80");
  std::string plain = "plain text\n";
  EXPECT_EQ(make_terminal_safe(plain), 0u);
  EXPECT_EQ(plain, "plain text\n");
}

}  // namespace
}  // namespace poslab
