// TensorBoard's event files, written without TensorFlow: TFRecord framing (length, masked CRC32C of the length, the
// bytes, masked CRC32C of the bytes) around tensorflow.Event messages encoded here by hand (wall_time, step,
// file_version, summary { value { tag, simple_value } }). What TensorBoard's own EventAccumulator reads.
#pragma once

#include <cstdint>
#include <string>

namespace poslab {

// CRC-32C (Castagnoli) of n bytes, and TFRecord's masked form of it.
uint32_t crc32c(const void* data, size_t n);
uint32_t masked_crc32c(const void* data, size_t n);

// One TFRecord: the framing around `bytes`.
std::string tf_record(const std::string& bytes);

// An Event's bytes: the first of a file (file_version "brain.Event:2"), or one scalar at a step.
std::string tf_file_version_event(double wall_time);
std::string tf_scalar_event(double wall_time, int64_t step, const std::string& tag, float value);

}  // namespace poslab
