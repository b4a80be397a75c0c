// The CRC-32 check of zip records on archives built here byte by byte, as LibTorch writes them (stored records, a
// central directory, zip64 past 4 GiB): every record whole passes, a changed byte names its record.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formats/zip_check.h"
#include "test_util.h"
#include "util/error.h"

namespace poslab {
namespace {

using test::TempDir;
using test::write_text;

void put(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint32_t crc_of(const std::string& bytes) {
  return static_cast<uint32_t>(
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

// Which fields of a zip archive stand at their zip64 sentinels, the values in the zip64 records instead: none; every
// size, offset and count; or only the end record's directory offset, as miniz and Python's zipfile write a file past
// 4 GiB of a few records (each field at its sentinel only where its value does not fit).
enum class Zip64 { none, every_field, directory_offset };

// A zip archive of stored records; with zip64 fields, it ends with the zip64 end record and locator, as a writer
// does past 4 GiB. `crc` replaces each record's CRC-32.
std::string zip_of(const std::vector<std::pair<std::string, std::string>>& records, Zip64 far,
                   const std::vector<uint32_t>& crc = {}) {
  const bool zip64 = far == Zip64::every_field;
  std::string file, directory;
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& [name, data] = records[i];
    const uint32_t c = i < crc.size() ? crc[i] : crc_of(data);
    const uint64_t offset = file.size();
    put(file, 0x04034b50, 4);
    put(file, 20, 2);  // version needed
    put(file, 0, 2);   // flags
    put(file, 0, 2);   // stored
    put(file, 0, 4);   // time, date
    put(file, c, 4);
    put(file, data.size(), 4);
    put(file, data.size(), 4);
    put(file, name.size(), 2);
    put(file, 4, 2);  // an extra field of padding, as LibTorch aligns its records
    file += name;
    put(file, 0xCAFE, 2);
    put(file, 0, 2);
    file += data;
    put(directory, 0x02014b50, 4);
    put(directory, 45, 2);
    put(directory, 45, 2);
    put(directory, 0, 2);
    put(directory, 0, 2);
    put(directory, 0, 4);
    put(directory, c, 4);
    put(directory, zip64 ? 0xFFFFFFFF : data.size(), 4);
    put(directory, zip64 ? 0xFFFFFFFF : data.size(), 4);
    put(directory, name.size(), 2);
    put(directory, zip64 ? 4 + 24 : 0, 2);
    put(directory, 0, 2);  // comment
    put(directory, 0, 4);  // disk, internal attributes
    put(directory, 0, 4);  // external attributes
    put(directory, zip64 ? 0xFFFFFFFF : offset, 4);
    directory += name;
    if (zip64) {
      put(directory, 1, 2);
      put(directory, 24, 2);
      put(directory, data.size(), 8);
      put(directory, data.size(), 8);
      put(directory, offset, 8);
    }
  }
  const uint64_t directory_at = file.size();
  file += directory;
  if (far != Zip64::none) {
    const uint64_t end64_at = file.size();
    put(file, 0x06064b50, 4);
    put(file, 44, 8);
    put(file, 45, 2);
    put(file, 45, 2);
    put(file, 0, 8);
    put(file, records.size(), 8);
    put(file, records.size(), 8);
    put(file, directory.size(), 8);
    put(file, directory_at, 8);
    put(file, 0x07064b50, 4);
    put(file, 0, 4);
    put(file, end64_at, 8);
    put(file, 1, 4);
  }
  put(file, 0x06054b50, 4);
  put(file, 0, 4);
  put(file, zip64 ? 0xFFFF : records.size(), 2);
  put(file, zip64 ? 0xFFFF : records.size(), 2);
  put(file, directory.size(), 4);
  put(file, far != Zip64::none ? 0xFFFFFFFF : directory_at, 4);
  put(file, 0, 2);
  return file;
}

const std::vector<std::pair<std::string, std::string>> kRecords = {
    {"archive/data.pkl", "a pickle's bytes"}, {"archive/data/0", std::string(3000, '\x3f') + "weights"}, {"empty", ""}};

TEST(ZipCheck, WholeRecordsPassAndAChangedByteNamesItsRecord) {
  TempDir dir;
  for (const Zip64 zip64 : {Zip64::none, Zip64::every_field, Zip64::directory_offset}) {
    const std::string whole = zip_of(kRecords, zip64), path = dir / "a.zip";
    write_text(path, whole);
    EXPECT_EQ(first_damaged_zip_record(path), "") << "zip64 " << static_cast<int>(zip64);
    std::string changed = whole;
    changed[changed.find("weights")] ^= 0x01;  // one bit of the second record
    write_text(path, changed);
    EXPECT_EQ(first_damaged_zip_record(path), "archive/data/0") << "zip64 " << static_cast<int>(zip64);
  }
}

TEST(ZipCheck, ARecordWithNoCrcIsLeftUncheckedAndABadOneIsNamed) {
  TempDir dir;
  const std::string path = dir / "a.zip";
  write_text(path, zip_of(kRecords, Zip64::none, {0, 0, 0}));  // a writer that skipped the CRC-32
  EXPECT_EQ(first_damaged_zip_record(path), "");
  write_text(path, zip_of(kRecords, Zip64::none, {crc_of(kRecords[0].second), 12345}));
  EXPECT_EQ(first_damaged_zip_record(path), "archive/data/0");
}

TEST(ZipCheck, AnArchiveCutShortOrNoArchiveIsAnErrorNamingTheFile) {
  TempDir dir;
  const std::string path = dir / "a.zip";
  const std::string whole = zip_of(kRecords, Zip64::none);
  for (const std::string& bytes :
       {whole.substr(0, whole.size() - 30), std::string("not a zip file at all, just text"), std::string()}) {
    write_text(path, bytes);
    try {
      first_damaged_zip_record(path);
      ADD_FAILURE() << "no error for " << bytes.size() << " bytes";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path + ": not a readable zip archive"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace poslab
