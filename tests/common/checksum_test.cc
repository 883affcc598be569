#include "common/checksum.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>

#include "common/fs.h"

namespace saturn {
namespace {

TEST(Crc32c, KnownValues) {
  // The check value of CRC-32C and RFC 3720's (iSCSI) test vectors.
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  std::string zeros(32, '\0'), ones(32, '\xff'), ascending(32, '\0');
  for (int i = 0; i < 32; ++i)
    ascending[i] = static_cast<char>(i);
  EXPECT_EQ(Crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(ascending.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(Crc32cHex(0xE3069283u), "e3069283");
  EXPECT_EQ(Crc32cHex(0x12u), "00000012");
}

TEST(Crc32c, TableAndProcessorAgreeAndContinue) {
  std::mt19937 rng(7);
  std::string data(10007, '\0');
  for (char& c : data)
    c = static_cast<char>(rng());
  for (size_t size : {0ul, 1ul, 7ul, 8ul, 9ul, 63ul, 4096ul, 10007ul}) {
    EXPECT_EQ(Crc32c(data.data(), size), Crc32cPortable(data.data(), size)) << size;
    for (size_t cut : {0ul, 1ul, size / 3}) {
      if (cut > size) continue;
      uint32_t head = Crc32c(data.data(), cut);
      EXPECT_EQ(Crc32c(data.data() + cut, size - cut, head), Crc32c(data.data(), size))
          << size << " cut at " << cut;
    }
  }
  std::string flipped = data;
  flipped[5000] ^= 0x10;
  EXPECT_NE(Crc32c(flipped.data(), flipped.size()), Crc32c(data.data(), data.size()));
}

TEST(Crc32c, DigestFileReadsTheWholeFile) {
  std::string path = ::testing::TempDir() + "/saturn_digest_file";
  std::string text(3 << 20, 'x');  // more than one read buffer
  text[12345] = 'y';
  WriteFileAtomic(path, text);
  FileDigest d = DigestFile(path);
  EXPECT_EQ(d.size, text.size());
  EXPECT_EQ(d.crc32c, Crc32c(text.data(), text.size()));
  EXPECT_THROW(DigestFile(path + ".missing"), std::runtime_error);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace saturn
