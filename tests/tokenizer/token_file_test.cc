// Token files (docs/contracts.md, Contract 5): headerless uint16 as always,
// uint32 after a header, and malformed ones refused with the file's name.
#include "tokenizer/token_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace saturn {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::string& bytes) {
  try {
    ReadTokenFileLayout(bytes, "train.bin");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenFile, HeaderlessIsUint16AsAlways) {
  std::vector<uint32_t> ids = {0, 1, 255, 256, 65535};
  std::string bytes;
  AppendTokenIds(ids.data(), ids.size(), 2, &bytes);
  EXPECT_EQ(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(4, 4), std::string("\xff\x00\x00\x01", 4));  // little-endian
  TokenFileLayout layout = ReadTokenFileLayout(bytes, "train.bin");
  EXPECT_EQ(layout.header_bytes, 0u);
  EXPECT_EQ(layout.id_bytes, 2);
  EXPECT_EQ(layout.vocab, 0u);
  ASSERT_EQ(layout.count, ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(layout.Id(bytes, i), ids[i]);
  EXPECT_EQ(ReadTokenFileLayout("", "empty.bin").count, 0u);
}

TEST(TokenFile, Uint32AfterAHeader) {
  std::vector<uint32_t> ids = {0, 65536, 128255, 70000};
  std::string bytes = TokenFileHeader(4, 128256);
  EXPECT_EQ(bytes.size(), kTokenFileHeaderBytes);
  AppendTokenIds(ids.data(), ids.size(), 4, &bytes);
  TokenFileLayout layout = ReadTokenFileLayout(bytes, "train.bin");
  EXPECT_EQ(layout.header_bytes, 16u);
  EXPECT_EQ(layout.id_bytes, 4);
  EXPECT_EQ(layout.vocab, 128256u);
  ASSERT_EQ(layout.count, ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(layout.Id(bytes, i), ids[i]);
}

TEST(TokenFile, TheWriterPicksUint16UpTo65536Ids) {
  EXPECT_EQ(WriterIdBytes(50257), 2);
  EXPECT_EQ(WriterIdBytes(65536), 2);
  EXPECT_EQ(WriterIdBytes(65537), 4);
  EXPECT_EQ(WriterIdBytes(151936), 4);
}

TEST(TokenFile, AUint16FileThatWouldSpellTheMagicNeedsAHeader) {
  std::vector<uint32_t> magic = {65535, 16723, 21588, 19279};
  EXPECT_TRUE(NeedsHeader(magic.data(), magic.size()));
  std::string bytes;
  AppendTokenIds(magic.data(), magic.size(), 2, &bytes);
  EXPECT_TRUE(HasTokenFileMagic(bytes));
  std::vector<uint32_t> other = {65535, 16723, 21588, 19278};
  EXPECT_FALSE(NeedsHeader(other.data(), other.size()));
  EXPECT_FALSE(NeedsHeader(magic.data(), 3));
  // Written with a header, it reads back as its ids.
  std::string file = TokenFileHeader(2, 65536);
  AppendTokenIds(magic.data(), magic.size(), 2, &file);
  TokenFileLayout layout = ReadTokenFileLayout(file, "train.bin");
  ASSERT_EQ(layout.count, 4u);
  EXPECT_EQ(layout.Id(file, 0), 65535u);
  EXPECT_EQ(layout.Id(file, 3), 19279u);
}

TEST(TokenFile, MalformedFilesAreInputErrorsNamingTheFile) {
  EXPECT_THAT(ErrorOf("abc"), HasSubstr("train.bin: has 3 bytes, not a whole number of uint16"));
  std::string header = TokenFileHeader(4, 100);
  EXPECT_THAT(ErrorOf(header.substr(0, 12)),
              HasSubstr("train.bin: begins with a token file's magic but has only 12 bytes"));
  EXPECT_THAT(ErrorOf(header + "abc"),
              HasSubstr("train.bin: has 3 bytes after its header, not a whole number of uint32"));
  std::string version = header;
  version[8] = 2;
  EXPECT_THAT(ErrorOf(version), HasSubstr("token file version 2 is not one this Saturn reads"));
  std::string width = header;
  width[10] = 8;
  EXPECT_THAT(ErrorOf(width), HasSubstr("ids of 8 bytes; expected 2 (uint16) or 4 (uint32)"));
  EXPECT_THAT(ErrorOf(TokenFileHeader(4, 0)), HasSubstr("a vocabulary of 0 ids"));
  EXPECT_EQ(ErrorOf(header), "(no error)");  // a header and no ids: an empty file
}

}  // namespace
}  // namespace saturn
