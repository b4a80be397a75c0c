#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "formats/npy.h"
#include "source_paths.h"
#include "test_util.h"
#include "util/error.h"

namespace poslab {
namespace {

using test::TempDir;
using test::write_text;

// read_npy's error for a bad file; npy_shape, which reads the header alone, refuses it with the same words.
std::string expect_error(const std::string& path) {
  try {
    read_npy(path);
  } catch (const Error& e) {
    if (std::filesystem::exists(path)) {
      EXPECT_EQ(test::error_of([&] { npy_shape(path); }), e.what() + std::string(" | ") + e.hint()) << path;
    }
    return e.what();
  }
  ADD_FAILURE() << "expected an error for " << path;
  return "";
}

TEST(Npy, WriterProducesAlignedFloat32AndReadsBack) {
  TempDir dir;
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f};
  const std::string bytes = npy_bytes(v.data(), 2, 3);
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  const size_t hlen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  EXPECT_NE(bytes.find("'shape': (2, 3)"), std::string::npos);
  EXPECT_EQ(bytes.size(), 10 + hlen + 6 * 4);
  write_text(dir / "a.npy", bytes);
  const NpyArray a = read_npy(dir / "a.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data, (std::vector<double>{1.5, -2.0, 3.25, 0.0, 5.0, 6.0}));
}

TEST(Npy, ReaderRejectsBadInputNamingTheFile) {
  TempDir dir;
  const std::vector<float> v(6, 1.0f);
  const std::string good = npy_bytes(v.data(), 2, 3);
  write_text(dir / "trunc.npy", good.substr(0, good.size() - 5));
  EXPECT_NE(expect_error(dir / "trunc.npy").find("trunc.npy: truncated"), std::string::npos);
  write_text(dir / "magic.npy", "PK\x03\x04 not npy at all");
  EXPECT_NE(expect_error(dir / "magic.npy").find("bad magic"), std::string::npos);
  std::string i4 = good;
  i4.replace(i4.find("<f4"), 3, "<i4");
  write_text(dir / "int.npy", i4);
  EXPECT_NE(expect_error(dir / "int.npy").find("dtype <i4"), std::string::npos);
  std::string three = good;
  three.replace(three.find("(2, 3)"), 6, "(1,2,3)");
  write_text(dir / "three.npy", three);
  EXPECT_NE(expect_error(dir / "three.npy").find("3 dimensions"), std::string::npos);
  EXPECT_NE(expect_error(dir / "missing.npy").find("missing.npy"), std::string::npos);
  EXPECT_NE(test::error_of([&] { npy_shape(dir / "missing.npy"); }).find(dir / "missing.npy" + ": cannot be read: "),
            std::string::npos);
  write_text(dir / "good.npy", good);
  EXPECT_EQ(npy_shape(dir / "good.npy"), (std::vector<int64_t>{2, 3}));
  // A negative or non-numeric size is no shape (a minus sign was once skipped: (-2, 3) read as 2 x 3).
  for (const char* shape : {"(-2, 3)", "(2, x)", "(2.0, 3)"}) {
    std::string odd = good;
    odd.replace(odd.find("(2, 3)"), 6, shape);
    write_text(dir / "odd.npy", odd);
    EXPECT_NE(expect_error(dir / "odd.npy").find("is not a tuple of sizes"), std::string::npos) << shape;
  }
  std::string one = good;
  one.replace(one.find("(2, 3)"), 6, "(6,)");
  write_text(dir / "one.npy", one);
  EXPECT_NE(expect_error(dir / "one.npy").find("array has 1 dimension,"), std::string::npos);
  // Shapes whose product overflows, or whose numbers do not fit an integer, are errors, not allocations: with the
  // data left or with none (a product that wraps to 0 would match no data).
  const std::string data = good.substr(good.size() - 6 * 4);
  for (const std::string& tail : {data, std::string()})
    for (const auto& [shape, expected] : std::vector<std::pair<std::string, std::string>>{
             {"(4294967296, 4294967296)", "truncated data: shape 4294967296, 4294967296 needs more than the"},
             {"(2147483648, 2147483648)", "truncated data: shape 2147483648, 2147483648 needs more than the"},
             {"(99999999999999999999999, 1)", "is not a plausible size"},
             {"(3074457345618258603, 6)", "is not a plausible size"}}) {
      std::string big = good.substr(0, good.size() - 6 * 4) + tail;
      big.replace(big.find("(2, 3)"), 6, shape);
      write_text(dir / "big.npy", big);
      EXPECT_NE(expect_error(dir / "big.npy").find(expected), std::string::npos)
          << shape << " with " << tail.size() << " bytes: " << expect_error(dir / "big.npy");
    }
}

// float64 tables (numpy's default dtype) read value for value, in C order.
TEST(Npy, ReadsFloat64ValueForValue) {
  TempDir dir;
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f};
  std::string f8 = npy_bytes(v.data(), 2, 3);
  f8.replace(f8.find("'<f4'"), 5, "'<f8'");
  f8.resize(f8.size() - 6 * 4);
  const std::vector<double> values = {1.5, -2.0, 3.25, 1e-300, 5.0, 6.0};
  f8.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
  write_text(dir / "f8.npy", f8);
  const NpyArray a = read_npy(dir / "f8.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data, values);
}

// numpy.save writes format 2.0 (a 4-byte header length) when the header outgrows 65535 bytes, and Fortran order for
// a transposed array (np.save(f, W.T)): the first reads as version 1 does, the second is refused with the fix.
TEST(Npy, ReadsVersionTwoAndRefusesFortranOrder) {
  TempDir dir;
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 5.0f, 6.0f};
  const std::string one = npy_bytes(v.data(), 2, 3);
  const size_t hlen = static_cast<unsigned char>(one[8]) | (static_cast<unsigned char>(one[9]) << 8);
  const std::string header = one.substr(10, hlen), data = one.substr(10 + hlen);
  const uint32_t hlen2 = static_cast<uint32_t>(hlen);
  std::string two = "\x93NUMPY";
  two += '\x02';
  two += '\x00';
  two.append(reinterpret_cast<const char*>(&hlen2), 4);
  write_text(dir / "v2.npy", two + header + data);
  const NpyArray a = read_npy(dir / "v2.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data, (std::vector<double>{1.5, -2.0, 3.25, 0.0, 5.0, 6.0}));
  std::string fortran = one;
  fortran.replace(fortran.find("'fortran_order': False"), 22, "'fortran_order': True ");
  write_text(dir / "f.npy", fortran);
  try {
    read_npy(dir / "f.npy");
    FAIL() << "a Fortran-order array was read";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir / "f.npy" + ": Fortran-order arrays are not supported");
    EXPECT_EQ(e.hint(), "save with numpy.ascontiguousarray first");
  }
  std::string four = one;
  four[6] = '\x04';
  write_text(dir / "v4.npy", four);
  EXPECT_NE(expect_error(dir / "v4.npy").find("unsupported .npy version 4"), std::string::npos);
}

TEST(Npy, ReadsTheRealGpt2Table) {
  const std::string path = poslab::test::source_dir() + "/tests/fixtures/gpt2_wpe_rows0-63.npy";
  const NpyArray a = read_npy(path);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{64, 768}));
  double norm0 = 0;
  for (int j = 0; j < 768; ++j) norm0 += a.data[j] * a.data[j];
  EXPECT_NEAR(std::sqrt(norm0), 9.876, 5e-3);  // tests/fixtures/README.md: position 0 has norm 9.876
}

}  // namespace
}  // namespace poslab
