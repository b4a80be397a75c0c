// TensorBoard's event files: CRC-32C against its published check value, TFRecord framing, and an Event's bytes
// against the protobuf encoding written out by hand. TensorBoard's own reader reads a run's file in
// tests/export/test_export.sh (the pip leg).
#include <gtest/gtest.h>

#include <cstring>

#include "formats/tfevents.h"

using namespace poslab;

TEST(TfEvents, Crc32cMatchesItsCheckValue) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C check value (RFC 3720)
  EXPECT_EQ(crc32c("", 0), 0u);
  const uint32_t c = crc32c("abc", 3);
  EXPECT_EQ(masked_crc32c("abc", 3), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST(TfEvents, ARecordFramesItsBytesWithTwoChecksums) {
  const std::string r = tf_record("hello");
  ASSERT_EQ(r.size(), 8u + 4 + 5 + 4);
  uint64_t n = 0;
  std::memcpy(&n, r.data(), 8);
  EXPECT_EQ(n, 5u);
  uint32_t len_crc = 0, data_crc = 0;
  std::memcpy(&len_crc, r.data() + 8, 4);
  std::memcpy(&data_crc, r.data() + 17, 4);
  EXPECT_EQ(len_crc, masked_crc32c(r.data(), 8));
  EXPECT_EQ(data_crc, masked_crc32c("hello", 5));
  EXPECT_EQ(r.substr(12, 5), "hello");
}

TEST(TfEvents, AScalarEventIsTheProtobufEncoding) {
  // Event { wall_time: 2.0 (field 1, fixed64), step: 300 (field 2, varint), summary (field 5) { value (field 1)
  // { tag: "a/b" (field 1), simple_value: 1.5 (field 2, fixed32) } } }
  std::string expected = "\x09";
  const double wall = 2.0;
  expected.append(reinterpret_cast<const char*>(&wall), 8);
  expected += "\x10\xac\x02";  // 300 = 0b10_0101100 -> 0xac 0x02
  expected +=
      "\x2a\x0c"
      "\x0a\x0a"
      "\x0a\x03"
      "a/b"
      "\x15";  // summary(12) value(10) tag(3) simple_value
  const float v = 1.5f;
  expected.append(reinterpret_cast<const char*>(&v), 4);
  EXPECT_EQ(tf_scalar_event(2.0, 300, "a/b", 1.5f), expected);
  const std::string first = tf_file_version_event(2.0);
  EXPECT_NE(first.find(std::string("\x1a\x0d") + "brain.Event:2"), std::string::npos);
}
