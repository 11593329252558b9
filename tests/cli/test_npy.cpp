// SPDX-License-Identifier: Apache-2.0
// Unit tests of the CLI's .npy / .npz code (cli/npy.cpp).
#include "npy.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>

using recur_cli::Array;
using recur_cli::NamedArrays;
using recur_cli::NpyError;

namespace {

// .npy bytes with a hand-written header dict.
std::string make_npy(const std::string& dict, const std::string& data, int major = 1) {
  std::string h = dict;
  const std::size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t n = h.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  return out + h + data;
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

template <typename T>
std::string raw(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    s.append(b, sizeof(T));
  }
  return s;
}

// The message of the NpyError `f` throws (fails the test if it does not throw one).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const NpyError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no NpyError thrown";
  return "";
}

std::string parse_error(const std::string& bytes) {
  return error_of([&] { recur_cli::parse_npy(bytes, "x.npy"); });
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/recur_npy_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  void write(const std::string& name, const std::string& bytes) const {
    std::ofstream f(path(name), std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::string dir_;
};

}  // namespace

// ---------------------------------------------------------------------------------- dtypes

TEST(NpyDtypes, Float32) {
  const Array a = recur_cli::parse_npy(make_npy(dict("<f4", "(2, 2)"), raw<float>({1.5f, -2.0f, 0.0f, 3.25f})), "x");
  EXPECT_EQ(a.shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(a.data, (std::vector<float>{1.5f, -2.0f, 0.0f, 3.25f}));
  EXPECT_EQ(a.dtype, "<f4");
}

TEST(NpyDtypes, Float64) {
  const Array a = recur_cli::parse_npy(make_npy(dict("<f8", "(3,)"), raw<double>({0.1, -1e300, 2.0})), "x");
  ASSERT_EQ(a.data.size(), 3u);
  EXPECT_EQ(a.data[0], 0.1f);
  EXPECT_TRUE(std::isinf(a.data[1]) && a.data[1] < 0);
  EXPECT_EQ(a.data[2], 2.0f);
}

TEST(NpyDtypes, Float16) {
  // 1.0, -2.0, 0.5, 65504 (max half), smallest subnormal
  const Array a =
      recur_cli::parse_npy(make_npy(dict("<f2", "(5,)"), raw<std::uint16_t>({0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001})), "x");
  EXPECT_EQ(a.data, (std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f, std::ldexp(1.0f, -24)}));
}

TEST(NpyDtypes, SignedIntegers) {
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("<i4", "(3,)"), raw<std::int32_t>({-7, 0, 19})), "x").data,
            (std::vector<float>{-7, 0, 19}));
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("<i8", "(2,)"), raw<std::int64_t>({-3, 1LL << 40})), "x").data,
            (std::vector<float>{-3, std::ldexp(1.0f, 40)}));
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("<i2", "(2,)"), raw<std::int16_t>({-32768, 32767})), "x").data,
            (std::vector<float>{-32768, 32767}));
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("|i1", "(2,)"), raw<std::int8_t>({-128, 5})), "x").data,
            (std::vector<float>{-128, 5}));
}

TEST(NpyDtypes, UnsignedIntegers) {
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("|u1", "(3,)"), raw<std::uint8_t>({0, 1, 255})), "x").data,
            (std::vector<float>{0, 1, 255}));
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("<u1", "(1,)"), raw<std::uint8_t>({200})), "x").data,
            (std::vector<float>{200}));
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("<u2", "(1,)"), raw<std::uint16_t>({65535})), "x").data,
            (std::vector<float>{65535}));
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("<u4", "(1,)"), raw<std::uint32_t>({4000000000u})), "x").data,
            (std::vector<float>{4000000000.0f}));
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("<u8", "(1,)"), raw<std::uint64_t>({12})), "x").data,
            (std::vector<float>{12}));
}

// Integer arrays keep their exact values beside the floats: ids above 2^24 must not round.
TEST(NpyDtypes, IntegersKeepTheirExactValues) {
  const std::int64_t big = (std::int64_t(1) << 24) + 1;
  const Array a = recur_cli::parse_npy(make_npy(dict("<i8", "(3,)"), raw<std::int64_t>({-3, big, INT64_MAX})), "x");
  EXPECT_TRUE(a.integer());
  EXPECT_EQ(a.ints, (std::vector<std::int64_t>{-3, big, INT64_MAX}));
  EXPECT_EQ(a.data[1], 16777216.0f) << "the float copy rounds; the ints do not";
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("|i1", "(2,)"), raw<std::int8_t>({-128, 5})), "x").ints,
            (std::vector<std::int64_t>{-128, 5}));
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("<u4", "(1,)"), raw<std::uint32_t>({4000000000u})), "x").ints,
            (std::vector<std::int64_t>{4000000000}));
  const Array u = recur_cli::parse_npy(make_npy(dict("<u8", "(2,)"), raw<std::uint64_t>({7, std::uint64_t(1) << 63})), "x");
  EXPECT_TRUE(u.integer());
  EXPECT_EQ(u.int_overflow, 1u) << "a uint64 beyond int64 is marked, for the caller to refuse";
  EXPECT_EQ(u.int_overflow_value, std::uint64_t(1) << 63);
  EXPECT_EQ(u.ints[0], 7);
  const Array f = recur_cli::parse_npy(make_npy(dict("<f4", "(1,)"), raw<float>({1.0f})), "x");
  EXPECT_FALSE(f.integer());
  EXPECT_FALSE(recur_cli::parse_npy(make_npy(dict("|b1", "(1,)"), raw<std::uint8_t>({1})), "x").integer());
  EXPECT_EQ(a.int_overflow, static_cast<std::size_t>(-1));
}

TEST(NpyDtypes, Bool) {
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("|b1", "(2, 2)"), raw<std::uint8_t>({1, 0, 0, 1})), "x").data,
            (std::vector<float>{1, 0, 0, 1}));
}

TEST(NpyDtypes, ScalarAndEmpty) {
  const Array s = recur_cli::parse_npy(make_npy(dict("<f4", "()"), raw<float>({4.0f})), "x");
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.data, (std::vector<float>{4.0f}));
  const Array e = recur_cli::parse_npy(make_npy(dict("<f4", "(0, 3)"), ""), "x");
  EXPECT_EQ(e.shape, (std::vector<std::int64_t>{0, 3}));
  EXPECT_TRUE(e.data.empty());
}

// ------------------------------------------------------------------------------- header forms

TEST(NpyHeader, Versions2And3) {
  const std::string data = raw<float>({1, 2});
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("<f4", "(2,)"), data, 2), "x").data, (std::vector<float>{1, 2}));
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict("<f4", "(2,)"), data, 3), "x").data, (std::vector<float>{1, 2}));
}

TEST(NpyHeader, KeyOrderQuotesAndSpacing) {
  const std::string d = "{\"shape\":(2,),\"fortran_order\":False,\"descr\":\"<f4\"}";
  EXPECT_EQ(recur_cli::parse_npy(make_npy(d, raw<float>({1, 2})), "x").data, (std::vector<float>{1, 2}));
  const std::string d2 = "{'descr': '<i8', 'fortran_order': False, 'shape': (1L, 2L), }";
  EXPECT_EQ(recur_cli::parse_npy(make_npy(d2, raw<std::int64_t>({3, 4})), "x").shape, (std::vector<std::int64_t>{1, 2}));
}

// ----------------------------------------------------------------------------------- errors

TEST(NpyErrors, BadMagic) {
  // A zip (an .npz given where an .npy goes) is named as one.
  EXPECT_NE(parse_error("PK\x03\x04 not numpy").find("x.npy: is a zip archive (an .npz?), not a .npy file"),
            std::string::npos);
  EXPECT_NE(parse_error("PK\x05 not numpy").find("x.npy: not a .npy file (bad magic"), std::string::npos);
  EXPECT_NE(parse_error("").find("bad magic"), std::string::npos);
  std::string b = make_npy(dict("<f4", "(1,)"), raw<float>({1}));
  b[1] = 'M';
  EXPECT_NE(parse_error(b).find("bad magic"), std::string::npos);
}

TEST(NpyErrors, TruncatedHeader) {
  const std::string full = make_npy(dict("<f4", "(1,)"), raw<float>({1}));
  EXPECT_NE(parse_error(full.substr(0, 7)).find("truncated header"), std::string::npos);
  EXPECT_NE(parse_error(full.substr(0, 9)).find("truncated header"), std::string::npos);
  EXPECT_NE(parse_error(full.substr(0, 40)).find("truncated header"), std::string::npos);
}

TEST(NpyErrors, UnsupportedVersion) {
  std::string b = make_npy(dict("<f4", "(1,)"), raw<float>({1}));
  b[6] = 4;
  EXPECT_NE(parse_error(b).find("unsupported .npy format version 4"), std::string::npos);
}

TEST(NpyErrors, HeaderTooLarge) {
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }" + std::string(70000, ' ');
  EXPECT_NE(parse_error(make_npy(h, raw<float>({1}), 2)).find("exceeds the limit of 65536"), std::string::npos);
}

TEST(NpyErrors, BadDict) {
  for (const std::string d : {"not a dict", "{'descr': '<f4', 'fortran_order': False}",
                              "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}",
                              "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)",
                              "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
                              "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}",
                              "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
                              "{'descr': '<f4', 'fortran_order': False, 'shape': [1]}",
                              "{'descr': 4, 'fortran_order': False, 'shape': (1,)}",
                              "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} trailing",
                              "{'descr: '<f4', 'fortran_order': False, 'shape': (1,)}"}) {
    const std::string m = parse_error(make_npy(d, raw<float>({1})));
    EXPECT_NE(m.find("x.npy: bad .npy header"), std::string::npos) << d << " -> " << m;
  }
}

// A message quotes what the file holds in part, with control bytes escaped: the CLI prints it.
TEST(NpyErrors, MessagesQuoteHugeOrBinaryTextInPart) {
  const std::string descr = parse_error(make_npy(dict("<" + std::string(60000, 'f'), "(1,)"), raw<float>({1})));
  EXPECT_NE(descr.find("x.npy: unsupported dtype '<fff"), std::string::npos) << descr.substr(0, 100);
  EXPECT_NE(descr.find("...'"), std::string::npos) << descr.substr(0, 300);
  EXPECT_LT(descr.size(), 400u);
  const std::string key = parse_error(
      make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'k\x01" + std::string(60000, 'k') + "': 1}",
               raw<float>({1})));
  EXPECT_NE(key.find("bad .npy header dict"), std::string::npos) << key.substr(0, 100);
  EXPECT_NE(key.find("'k\\x01kkk"), std::string::npos) << key.substr(0, 300);
  EXPECT_LE(key.size(), 2048u + 3);
  for (char c : key) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << "a control byte in: " << key.substr(0, 300);
}

TEST(NpyErrors, NonAsciiInVersion1Header) {
  EXPECT_NE(parse_error(make_npy("{'descr': '<f4\xc3\xa9', 'fortran_order': False, 'shape': (1,)}", raw<float>({1})))
                .find("non-ASCII"),
            std::string::npos);
}

TEST(NpyErrors, FortranOrder) {
  EXPECT_NE(parse_error(make_npy(dict("<f4", "(2, 2)", "True"), raw<float>({1, 2, 3, 4}))).find("fortran_order is True"),
            std::string::npos);
}

TEST(NpyErrors, BigEndian) {
  EXPECT_NE(parse_error(make_npy(dict(">f4", "(1,)"), raw<float>({1}))).find("big-endian dtype '>f4'"), std::string::npos);
  EXPECT_NE(parse_error(make_npy(dict(">i8", "(1,)"), raw<std::int64_t>({1}))).find("big-endian"), std::string::npos);
  // one-byte types have no byte order
  EXPECT_EQ(recur_cli::parse_npy(make_npy(dict(">u1", "(1,)"), raw<std::uint8_t>({9})), "x").data,
            (std::vector<float>{9}));
}

TEST(NpyErrors, UnsupportedDtypes) {
  EXPECT_NE(parse_error(make_npy(dict("<c8", "(1,)"), std::string(8, '\0'))).find("complex"), std::string::npos);
  EXPECT_NE(parse_error(make_npy(dict("<c16", "(1,)"), std::string(16, '\0'))).find("complex"), std::string::npos);
  EXPECT_NE(parse_error(make_npy(dict("|O", "(1,)"), std::string(8, '\0'))).find("object arrays"), std::string::npos);
  EXPECT_NE(parse_error(make_npy(dict("<U3", "(1,)"), std::string(12, '\0'))).find("strings"), std::string::npos);
  EXPECT_NE(parse_error(make_npy(dict("<M8[ns]", "(1,)"), std::string(8, '\0'))).find("dates"), std::string::npos);
  EXPECT_NE(parse_error(make_npy(dict("<f16", "(1,)"), std::string(16, '\0'))).find("unsupported dtype '<f16'"),
            std::string::npos);
  EXPECT_NE(parse_error(make_npy(dict("f4", "(1,)"), raw<float>({1}))).find("byte-order"), std::string::npos);
  EXPECT_NE(parse_error(make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", raw<float>({1})))
                .find("structured"),
            std::string::npos);
}

TEST(NpyErrors, TruncatedData) {
  const std::string m = parse_error(make_npy(dict("<f4", "(2, 3)"), raw<float>({1, 2, 3})));
  EXPECT_NE(m.find("x.npy: truncated data: shape (2, 3) of <f4 needs 24 bytes, the file holds 12"), std::string::npos) << m;
}

TEST(NpyErrors, ShapeLengthMismatch) {
  const std::string m = parse_error(make_npy(dict("<f4", "(2,)"), raw<float>({1, 2, 3})));
  EXPECT_NE(m.find("shape/length mismatch"), std::string::npos) << m;
  EXPECT_NE(parse_error(make_npy(dict("<f4", "(2,)"), raw<float>({1, 2}) + "x")).find("mismatch"), std::string::npos);
}

TEST(NpyErrors, HugeDeclaredShape) {
  // Rejected from the header alone: nothing of that size is allocated.
  EXPECT_NE(parse_error(make_npy(dict("<f4", "(1000000000, 1000000000)"), raw<float>({1}))).find("truncated data"),
            std::string::npos);
  EXPECT_NE(parse_error(make_npy(dict("<f8", "(4294967296, 4294967296, 4294967296)"), raw<float>({1}))).find("too large"),
            std::string::npos);
  EXPECT_NE(parse_error(make_npy(dict("<f4", "(99999999999999999999999,)"), raw<float>({1}))).find("too large"),
            std::string::npos);
}

// --------------------------------------------------------------------------------- files

TEST_F(TempDir, NpyRoundTrip) {
  Array a;
  a.shape = {2, 3, 1};
  a.data = {1.0f, -0.5f, 3e-8f, INFINITY, -0.0f, 1e30f};
  recur_cli::write_npy(path("a.npy"), a);
  const Array b = recur_cli::read_npy(path("a.npy"));
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.dtype, "<f4");
  ASSERT_EQ(b.data.size(), a.data.size());
  EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size() * 4), 0);
}

TEST_F(TempDir, NpyRoundTripShapes) {
  for (const std::vector<std::int64_t>& shape :
       {std::vector<std::int64_t>{}, {0}, {1}, {7}, {2, 0, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}) {
    Array a;
    a.shape = shape;
    std::size_t n = 1;
    for (auto d : shape) n *= static_cast<std::size_t>(d);
    for (std::size_t i = 0; i < n; ++i) a.data.push_back(static_cast<float>(i) * 0.25f);
    const std::string bytes = recur_cli::encode_npy(a);
    const std::uint16_t hlen = static_cast<std::uint16_t>(static_cast<unsigned char>(bytes[8]) |
                                                          (static_cast<unsigned char>(bytes[9]) << 8));
    EXPECT_EQ((10 + hlen) % 64, 0u);  // numpy aligns the data to 64 bytes
    EXPECT_EQ(bytes[10 + hlen - 1], '\n');
    const Array b = recur_cli::parse_npy(bytes, "mem");
    EXPECT_EQ(b.shape, shape);
    EXPECT_EQ(b.data, a.data);
  }
}

TEST_F(TempDir, EncodeRejectsInconsistentArray) {
  Array a;
  a.shape = {2, 2};
  a.data = {1, 2, 3};
  EXPECT_NE(error_of([&] { recur_cli::encode_npy(a); }).find("holds 4 values, the array has 3"), std::string::npos);
}

TEST_F(TempDir, ReadNpyMissingFile) {
  const std::string m = error_of([&] { recur_cli::read_npy(path("nope.npy")); });
  EXPECT_NE(m.find(path("nope.npy") + ": cannot open"), std::string::npos) << m;
  EXPECT_NE(error_of([&] { recur_cli::read_npy(dir_); }).find("is a directory"), std::string::npos);
}

TEST_F(TempDir, ReadNpyNamesTheFile) {
  write("bad.npy", make_npy(dict("<c8", "(1,)"), std::string(8, '\0')));
  const std::string m = error_of([&] { recur_cli::read_npy(path("bad.npy")); });
  EXPECT_EQ(m.rfind(path("bad.npy") + ": unsupported dtype '<c8' (complex numbers)", 0), 0u) << m;
}

TEST_F(TempDir, WriteNpyToMissingDirectory) {
  Array a;
  a.shape = {1};
  a.data = {1};
  EXPECT_NE(error_of([&] { recur_cli::write_npy(path("no/such/dir.npy"), a); }).find("cannot create"), std::string::npos);
}

TEST_F(TempDir, NpzRoundTrip) {
  NamedArrays arrays;
  Array a, b;
  a.shape = {2, 2};
  a.data = {1, 2, 3, 4};
  b.shape = {3};
  b.data = {-1, 0.5f, 9};
  arrays.emplace_back("output", a);
  arrays.emplace_back("state_h", b);
  recur_cli::write_npz(path("o.npz"), arrays);
  const NamedArrays r = recur_cli::read_npz(path("o.npz"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].first, "output");
  EXPECT_EQ(r[0].second.shape, a.shape);
  EXPECT_EQ(r[0].second.data, a.data);
  EXPECT_EQ(r[1].first, "state_h");
  EXPECT_EQ(r[1].second.data, b.data);
  // overwriting an existing archive replaces it
  arrays.pop_back();
  recur_cli::write_npz(path("o.npz"), arrays);
  EXPECT_EQ(recur_cli::read_npz(path("o.npz")).size(), 1u);
}

TEST_F(TempDir, NpzWriteRejectsDuplicateNames) {
  NamedArrays arrays;
  Array a;
  a.shape = {1};
  a.data = {1};
  arrays.emplace_back("x", a);
  arrays.emplace_back("x", a);
  EXPECT_NE(error_of([&] { recur_cli::write_npz(path("d.npz"), arrays); }).find("duplicate"), std::string::npos);
}

TEST_F(TempDir, NpzErrors) {
  EXPECT_NE(error_of([&] { recur_cli::read_npz(path("missing.npz")); }).find("missing.npz: cannot open"),
            std::string::npos);
  write("junk.npz", "this is not a zip archive at all");
  EXPECT_NE(error_of([&] { recur_cli::read_npz(path("junk.npz")); }).find("junk.npz: not a readable .npz"),
            std::string::npos);
  // A zip whose member is a broken .npy: the message names the archive and the member.
  NamedArrays arrays;
  Array a;
  a.shape = {2};
  a.data = {1, 2};
  arrays.emplace_back("good", a);
  recur_cli::write_npz(path("z.npz"), arrays);
  std::string bytes;
  {
    std::ifstream f(path("z.npz"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  // Corrupt the stored member's dtype in place ('<f4' -> '>f4'); stored members are plain bytes.
  const auto pos = bytes.find("'<f4'");
  ASSERT_NE(pos, std::string::npos);
  bytes[pos + 1] = '>';
  write("z2.npz", bytes);
  const std::string m = error_of([&] { recur_cli::read_npz(path("z2.npz")); });
  // Either libzip's CRC check or the npy parser catches it; both name the archive.
  EXPECT_NE(m.find(path("z2.npz")), std::string::npos) << m;
}

// A member whose declared size exceeds what the archive holds (the sizes patched to 0xFFFFFFF0):
// the message gives both sizes and what to do, not "read 344 of 4294967280 bytes (No error)".
TEST_F(TempDir, NpzMemberDeclaredLargerThanItIs) {
  NamedArrays arrays;
  Array a;
  a.shape = {2};
  a.data = {1, 2};
  arrays.emplace_back("good", a);
  recur_cli::write_npz(path("s.npz"), arrays);
  std::string bytes;
  {
    std::ifstream f(path("s.npz"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int k = 0; k < 4; ++k) bytes[at + static_cast<std::size_t>(k)] = static_cast<char>((v >> (8 * k)) & 0xFF);
  };
  const auto local = bytes.find("PK\x03\x04");
  const auto central = bytes.find("PK\x01\x02");
  ASSERT_NE(local, std::string::npos);
  ASSERT_NE(central, std::string::npos);
  for (std::size_t at : {local + 18, local + 22, central + 20, central + 24}) put32(at, 0xFFFFFFF0u);
  write("s2.npz", bytes);
  const std::string m = error_of([&] { recur_cli::read_npz(path("s2.npz")); });
  EXPECT_NE(m.find("good.npy"), std::string::npos) << m;
  EXPECT_NE(m.find("declares 4294967280 bytes for this member but holds"), std::string::npos) << m;
  EXPECT_NE(m.find("write it again"), std::string::npos) << m;
  EXPECT_EQ(m.find("No error"), std::string::npos) << m;
}

TEST_F(TempDir, NpzMemberNotNpy) {
  // Build a zip with a non-.npy member through the writer, then rename it inside the bytes.
  NamedArrays arrays;
  Array a;
  a.shape = {1};
  a.data = {1};
  arrays.emplace_back("abc", a);
  recur_cli::write_npz(path("n.npz"), arrays);
  std::string bytes;
  {
    std::ifstream f(path("n.npz"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  for (std::size_t p = bytes.find("abc.npy"); p != std::string::npos; p = bytes.find("abc.npy", p + 1))
    bytes.replace(p, 7, "abc.txt");
  write("n2.npz", bytes);
  EXPECT_NE(error_of([&] { recur_cli::read_npz(path("n2.npz")); }).find("member 'abc.txt' is not a .npy file"),
            std::string::npos);
  // A member name with a control byte is quoted with it escaped.
  for (std::size_t p = bytes.find("abc.txt"); p != std::string::npos; p = bytes.find("abc.txt", p + 1))
    bytes.replace(p, 7, "a\nc.txt");
  write("n3.npz", bytes);
  EXPECT_NE(error_of([&] { recur_cli::read_npz(path("n3.npz")); }).find("member 'a\\x0Ac.txt' is not a .npy file"),
            std::string::npos);
}

// Files written by numpy itself (np.save / np.savez / np.savez_compressed in make_models.py).
TEST(NumpyFiles, ReadsWhatNumpyWrote) {
  const std::string d = std::string(RECUR_CLI_MODEL_DIR) + "/keras3/";
  const Array ids = recur_cli::read_npy(d + "tokens_x.npy");
  EXPECT_EQ(ids.dtype, "<i4");
  EXPECT_EQ(ids.shape, (std::vector<std::int64_t>{3, 6}));
  EXPECT_EQ(ids.data[0], 3.0f);
  const Array x = recur_cli::read_npy(d + "bigru_x.npy");
  EXPECT_EQ(x.dtype, "<f8");
  EXPECT_EQ(x.shape, (std::vector<std::int64_t>{3, 6, 3}));
  const Array mask = recur_cli::read_npy(d + "layer_gru_mask.npy");
  EXPECT_EQ(mask.dtype, "|b1");
  EXPECT_EQ(mask.data[4], 0.0f);
  EXPECT_EQ(mask.data[0], 1.0f);
  const NamedArrays stored = recur_cli::read_npz(d + "layer_gru_y.npz");  // np.savez: stored
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[0].first, "output");
  EXPECT_EQ(stored[0].second.shape, (std::vector<std::int64_t>{3, 6, 5}));
  EXPECT_EQ(stored[1].first, "state_h");
  const NamedArrays deflated = recur_cli::read_npz(d + "layer_lstm_y.npz");  // np.savez_compressed
  ASSERT_EQ(deflated.size(), 3u);
  EXPECT_EQ(deflated[2].first, "state_c");
  EXPECT_EQ(deflated[2].second.shape, (std::vector<std::int64_t>{3, 3}));
}
