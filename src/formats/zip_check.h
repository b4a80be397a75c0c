// The CRC-32 check of a zip archive's records: a LibTorch checkpoint is a zip archive of stored (not compressed)
// records, each with the CRC-32 of its bytes in the archive's directory, but LibTorch reads them without checking it
// (its miniz is built with the check off): a byte changed on disk after the file was written loads as a wrong weight
// without a word. Zip64 archives (past 4 GiB or 65,535 records) included.
#pragma once

#include <string>

namespace poslab {

// The name of the first record whose bytes do not give the CRC-32 the archive's directory holds for it; "" when
// every record matches. A record with no CRC recorded (0 for bytes whose CRC is not 0: a writer that skipped it) or
// stored compressed is left unchecked. Throws poslab::Error naming the file when its directory cannot be read (no
// zip archive, or one cut short).
std::string first_damaged_zip_record(const std::string& path);

}  // namespace poslab
