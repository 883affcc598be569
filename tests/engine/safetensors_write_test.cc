// The safetensors writer (src/engine/formats/safetensors_write.h), torch-free:
// its head byte for byte against one written from the format's definition
// (Hugging Face's safetensors README: an 8-byte little-endian header size, a
// JSON header of {name: {dtype, shape, data_offsets}} relative to the end of
// the header, "__metadata__" of string values; the header padded with
// spaces), the tensors' bytes where their offsets say, and the reader of the
// same folder (IndexWeightBytes) on what it writes. tests/python/
// test_group_models.py reads a written file with saturn_models'
// read_safetensors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/formats/bytes.h"
#include "engine/formats/safetensors_write.h"
#include "engine/formats/weight_index.h"

namespace saturn::engine {
namespace {

std::string Bytes(const void* data, size_t n) {
  return std::string(static_cast<const char*>(data), n);
}

// Writes `tensors` with `data` (their bytes one after another) in pieces
// of `piece` bytes.
std::string Write(const std::vector<SafetensorsEntry>& tensors, const std::string& data,
                  size_t piece, const std::map<std::string, std::string>& metadata = {}) {
  std::string out;
  SafetensorsWriter w([&](const void* p, size_t n) { out += Bytes(p, n); }, tensors, metadata);
  for (size_t at = 0; at < data.size(); at += piece)
    w.Write(data.data() + at, std::min(piece, data.size() - at));
  w.Finish();
  EXPECT_EQ(w.Written(), out.size());
  return out;
}

TEST(SafetensorsWrite, HeadIsTheFormatsByteForByte) {
  std::vector<float> a = {1.5f, -2.0f};
  std::string data = Bytes(a.data(), 8);
  std::string file =
      Write({{"g/out.weight", StoredDtype::kF32, {1, 2}}}, data, 3, {{"format", "pt"}});
  // Written out by hand: 98 characters of JSON and 6 spaces, 104 (0x68),
  // so that the tensors start at 8 + 104 = 112, a multiple of 8.
  std::string json =
      "{\"__metadata__\":{\"format\":\"pt\"},\"g/out.weight\":{\"dtype\":\"F32\",\"shape\":[1,2],"
      "\"data_offsets\":[0,8]}}";
  ASSERT_EQ(json.size(), 98u);
  std::string expected = std::string("\x68\0\0\0\0\0\0\0", 8) + json + "      " + data;
  EXPECT_EQ(file, expected);
}

TEST(SafetensorsWrite, PadsTheHeaderWithSpacesToEightBytes) {
  for (const std::string name :
       {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh"}) {
    std::string file = Write({{name, StoredDtype::kU8, {1}}}, "x", 1);
    uint64_t length = LittleEndian(file, 0, 8);
    EXPECT_EQ(length % 8, 0u) << name;
    std::string header = file.substr(8, length);
    EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
              "{" + JsonName(name) + ":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}")
        << name;
    EXPECT_EQ(file.size(), 8 + length + 1) << name;
    EXPECT_EQ(file.back(), 'x');
  }
}

TEST(SafetensorsWrite, TensorsLieWhereTheirOffsetsSayAndReadBack) {
  std::vector<float> w = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> ids = {7, -8};
  std::vector<float> b = {0.25f};
  std::string data = Bytes(w.data(), 24) + Bytes(ids.data(), 16) + Bytes(b.data(), 4);
  std::vector<SafetensorsEntry> tensors = {{"layers.0.weight", StoredDtype::kF32, {2, 3}},
                                           {"ids", StoredDtype::kI64, {2}},
                                           {"out.bias", StoredDtype::kF32, {1}},
                                           {"empty", StoredDtype::kF32, {0, 4}}};
  // In pieces that end inside tensors and span them.
  std::string file = Write(tensors, data, 7, {{"format", "pt"}, {"saturn", "groups"}});
  uint64_t length = LittleEndian(file, 0, 8);
  nlohmann::json header = nlohmann::json::parse(file.substr(8, length));
  EXPECT_EQ(header["__metadata__"], (nlohmann::json{{"format", "pt"}, {"saturn", "groups"}}));
  EXPECT_EQ(header["layers.0.weight"]["data_offsets"], (nlohmann::json{0, 24}));
  EXPECT_EQ(header["ids"]["dtype"], "I64");
  EXPECT_EQ(header["ids"]["data_offsets"], (nlohmann::json{24, 40}));
  EXPECT_EQ(header["out.bias"]["data_offsets"], (nlohmann::json{40, 44}));
  EXPECT_EQ(header["empty"]["shape"], (nlohmann::json{0, 4}));
  EXPECT_EQ(header["empty"]["data_offsets"], (nlohmann::json{44, 44}));
  EXPECT_EQ(file.size(), 8 + length + 44);
  EXPECT_EQ(file.substr(8 + length), data);

  StringBytes source(file, "groups.safetensors");
  WeightIndex index = IndexWeightBytes(source);
  EXPECT_EQ(index.format, "safetensors");
  const StoredTensor* t = index.Find("layers.0.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file.substr(t->offset, 24), Bytes(w.data(), 24));
  t = index.Find("out.bias");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(file.substr(t->offset, 4), Bytes(b.data(), 4));
}

TEST(SafetensorsWrite, NoTensorsIsAnEmptyHeader) {
  std::string file = Write({}, "", 1);
  EXPECT_EQ(file, std::string("\x08\0\0\0\0\0\0\0", 8) + "{}      ");
  // (IndexWeights refuses it: a weights file without tensors is no model.)
}

TEST(SafetensorsWrite, NamesThatAreNotUtf8AreReplacedAsJsonNameSays) {
  std::string name = "caf\xe9/out.bias";  // Latin-1, not UTF-8
  float v = 1;
  std::string file = Write({{name, StoredDtype::kF32, {1}}}, Bytes(&v, 4), 4);
  nlohmann::json header = nlohmann::json::parse(file.substr(8, LittleEndian(file, 0, 8)));
  std::string replaced = nlohmann::json::parse(JsonName(name)).get<std::string>();
  EXPECT_EQ(replaced, "caf\xef\xbf\xbd/out.bias");
  EXPECT_TRUE(header.contains(replaced));
}

TEST(SafetensorsWrite, RefusesBadNamesAndWrongByteCounts) {
  auto sink = [](const void*, size_t) {};
  EXPECT_THROW(
      SafetensorsWriter(sink, {{"a", StoredDtype::kF32, {1}}, {"a", StoredDtype::kF32, {1}}}),
      std::invalid_argument);
  EXPECT_THROW(SafetensorsWriter(sink, {{"__metadata__", StoredDtype::kF32, {1}}}),
               std::invalid_argument);
  EXPECT_THROW(SafetensorsWriter(sink, {{"", StoredDtype::kF32, {1}}}), std::invalid_argument);
  EXPECT_THROW(SafetensorsWriter(sink, {{"a", StoredDtype::kF32, {-1}}}), std::invalid_argument);
  char bytes[12] = {};
  SafetensorsWriter short_one(sink, {{"a", StoredDtype::kF32, {2}}});
  short_one.Write(bytes, 4);
  EXPECT_THROW(short_one.Finish(), std::logic_error);
  SafetensorsWriter long_one(sink, {{"a", StoredDtype::kF32, {2}}});
  EXPECT_THROW(long_one.Write(bytes, 12), std::logic_error);
}

}  // namespace
}  // namespace saturn::engine
