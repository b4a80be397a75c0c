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
  auto why = [&](const std::string& text) { return json_object_error(text, j); };
  EXPECT_EQ(why("{\"a\": [1, 2]}"), "");
  EXPECT_EQ(j, (nlohmann::json{{"a", {1, 2}}}));
  // Cut short: in a value, in a string, in a literal, or nothing at all.
  for (const char* cut : {"{\"a\": 1,\n \"b\": [1, ", "{\"a\": \"ab", "{\"a\": tr", ""})
    EXPECT_EQ(why(cut).rfind("cut short: the text ends before the JSON does (at line ", 0), 0u)
        << cut << ": " << why(cut);
  EXPECT_EQ(why("{\"a\": 1,\n \"b\": [1, ")
                .rfind("cut short: the text ends before the JSON does (at line 2, column 11: syntax error", 0),
            0u);
  // Wrong where it stops, its last character included: not JSON, not cut short.
  for (const char* bad : {"{\"a\":1,}", "{\"a\": 1]", "{\"a\": 1}}", "{a: 1}"})
    EXPECT_EQ(why(bad).rfind("not JSON (at line 1, column ", 0), 0u) << bad << ": " << why(bad);
  EXPECT_EQ(why("{\"a\": 1}\n}").rfind("not JSON (at line 2, column 1: syntax error", 0), 0u) << why("{\"a\": 1}\n}");
  EXPECT_EQ(why("[1]"), "a JSON array, not an object");
  EXPECT_EQ(why("\"x\""), "a JSON string, not an object");
  EXPECT_EQ(why("null"), "a JSON null, not an object");
  EXPECT_EQ(why("3"), "a JSON number, not an object");
  EXPECT_EQ(why("true"), "a JSON boolean, not an object");
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
