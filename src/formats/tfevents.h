// TensorBoard's event files, written and read without TensorFlow: TFRecord framing (length, masked CRC32C of the
// length, the bytes, masked CRC32C of the bytes) around tensorflow.Event messages encoded here by hand (wall_time,
// step, file_version, summary { value { tag, simple_value } }). What TensorBoard's own EventAccumulator reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace poslab {

// CRC-32C (Castagnoli) of n bytes, and TFRecord's masked form of it.
uint32_t crc32c(const void* data, size_t n);
uint32_t masked_crc32c(const void* data, size_t n);

// One TFRecord: the framing around `bytes`.
std::string tf_record(const std::string& bytes);

// Now, as an Event's wall_time: seconds since the Unix epoch.
double tf_wall_time();

// An Event's bytes: the first of a file (file_version "brain.Event:2"), or one scalar at a step.
std::string tf_file_version_event(double wall_time);
std::string tf_scalar_event(double wall_time, int64_t step, const std::string& tag, float value);

// One event read back: the file-version event or a scalar (the first value of its summary).
struct TfEvent {
  double wall_time = 0.0;
  int64_t step = 0;
  bool file_version = false;
  std::string tag;  // empty for an event without a scalar
  float value = 0.0f;
  size_t end = 0;  // the byte offset just past its record
};
// The events of a file's bytes, in order. Reading stops at the first record that is cut short or fails its checksums
// (a process killed while appending leaves one at the end): `valid` is the length of the whole records before it.
struct TfEventFile {
  std::vector<TfEvent> events;
  size_t valid = 0;
};
TfEventFile read_tf_events(const std::string& bytes);

}  // namespace poslab
