// The readers and writer of weight files (src/engine/formats), torch-free:
// what TorchSaveWriter writes reads back through the index, safetensors
// headers are checked, and damaged or hostile files are InputErrors, never
// crashes. (tests/engine/test_gpt2.py reads files PyTorch itself wrote.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "engine/formats/pickle.h"
#include "engine/formats/torch_save.h"
#include "engine/formats/weight_index.h"
#include "engine/formats/zip.h"

namespace saturn::engine {
namespace {

using ::testing::HasSubstr;

std::string Floats(const std::vector<float>& values) {
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::string SaveBytes(const std::vector<std::pair<std::string, std::vector<float>>>& tensors,
                      const std::vector<std::vector<int64_t>>& shapes) {
  std::string out;
  TorchSaveWriter writer(
      [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); });
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string data = Floats(tensors[i].second);
    writer.Add(tensors[i].first, StoredDtype::kF32, shapes[i], data.data(), data.size());
  }
  writer.Finish();
  return out;
}

std::string ErrorOf(const std::string& bytes) {
  try {
    IndexWeightBytes(StringBytes(bytes, "w.bin"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(WeightFormats, WhatTorchSaveWriterWritesIndexesBackToTheSameBytes) {
  std::string file = SaveBytes({{"a.weight", {1, 2, 3, 4, 5, 6}}, {"b", {7}}}, {{2, 3}, {1}});
  StringBytes source(file, "model.pt");
  WeightIndex index = IndexWeightBytes(source);
  EXPECT_EQ(index.format, "torch.save (zip)");
  ASSERT_EQ(index.names, (std::vector<std::string>{"a.weight", "b"}));
  const StoredTensor* a = index.Find("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(a->Contiguous());
  EXPECT_EQ(a->offset % 64, 0u);  // aligned like PyTorch's
  EXPECT_EQ(source.Read(a->offset, 24), Floats({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(source.Read(index.Find("b")->offset, 4), Floats({7}));
  EXPECT_EQ(index.Find("c"), nullptr);
}

TEST(WeightFormats, ZipEntriesCarryTheirCrc32) {
  std::string file = SaveBytes({{"x", {0.5f, -2.0f}}}, {{2}});
  std::vector<ZipEntry> entries = ReadZipDirectory(StringBytes(file, "z"));
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(entries[0].name, "archive/data/0");
  // The check value of CRC-32 (IEEE), as zip uses it.
  EXPECT_EQ(ZipCrc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(ZipCrc32("12345", 5, ZipCrc32("1234", 4)), ZipCrc32("123412345", 9));
}

TEST(WeightFormats, SafetensorsHeadersAreIndexedAndChecked) {
  std::string header =
      R"({"w":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]},"__metadata__":{"format":"pt"}})";
  std::string file(8, '\0');
  uint64_t length = header.size();
  std::memcpy(file.data(), &length, 8);
  file += header + std::string(8, '\x01');
  WeightIndex index = IndexWeightBytes(StringBytes(file, "model.safetensors"));
  EXPECT_EQ(index.format, "safetensors");
  ASSERT_NE(index.Find("w"), nullptr);
  EXPECT_EQ(index.Find("w")->dtype, StoredDtype::kF16);
  EXPECT_EQ(index.Find("w")->offset, 8 + header.size());
  EXPECT_EQ(index.Find("w")->Describe(), "[2, 2] F16");

  auto with = [&](const std::string& entry) {
    std::string h = R"({"w":)" + entry + "}";
    std::string f(8, '\0');
    uint64_t n = h.size();
    std::memcpy(f.data(), &n, 8);
    return f + h + std::string(8, '\0');
  };
  EXPECT_THAT(ErrorOf(with(R"({"dtype":"F16","shape":[2,2],"data_offsets":[0,6]})")),
              HasSubstr("data_offsets do not hold [2, 2] F16"));
  EXPECT_THAT(ErrorOf(with(R"({"dtype":"F16","shape":[2,2],"data_offsets":[0,80]})")),
              HasSubstr("outside the file"));
  EXPECT_THAT(ErrorOf(with(R"({"dtype":"Q4","shape":[2],"data_offsets":[0,8]})")),
              HasSubstr("dtype 'Q4'"));
  EXPECT_THAT(ErrorOf(with(R"({"shape":[2],"data_offsets":[0,8]})")), HasSubstr("no dtype"));
}

TEST(WeightFormats, DamagedFilesAreInputErrorsNamingTheFile) {
  std::string file = SaveBytes({{"x", {1, 2}}}, {{2}});
  EXPECT_THAT(ErrorOf("not weights at all"), HasSubstr("w.bin: not a weights file"));
  EXPECT_THAT(ErrorOf(file.substr(0, file.size() - 30)), HasSubstr("w.bin"));
  // Every prefix and every single flipped byte: an error or a valid index,
  // never a crash or a read outside the data.
  for (size_t cut = 0; cut < file.size(); cut += 7) {
    std::string part = file.substr(0, cut);
    try {
      IndexWeightBytes(StringBytes(part, "w.bin"));
    } catch (const InputError&) {
    }
  }
  for (size_t at = 0; at < file.size(); ++at) {
    std::string bent = file;
    bent[at] = static_cast<char>(bent[at] ^ 0x5a);
    try {
      WeightIndex index = IndexWeightBytes(StringBytes(bent, "w.bin"));
      for (const auto& [name, t] : index.tensors)
        EXPECT_LE(t.offset + t.SpanBytes(), bent.size()) << name;
    } catch (const InputError&) {
    }
  }
}

TEST(Pickle, StateDictPicklesReadBackAsCallsOfRebuildTensor) {
  std::string pickle =
      StateDictPickle({"a", "b"}, {StoredDtype::kF32, StoredDtype::kBF16}, {{3, 4}, {5}});
  PickleReader reader(pickle, "data.pkl");
  PickleRef root = reader.Read();
  ASSERT_TRUE(root->Is(PickleValue::Kind::kDict));
  ASSERT_EQ(root->items.size(), 4u);
  EXPECT_EQ(root->items[0]->text, "a");
  const PickleRef& call = root->items[1];
  ASSERT_TRUE(call->Is(PickleValue::Kind::kCall));
  EXPECT_EQ(call->items[0]->text, "torch._utils._rebuild_tensor_v2");
  const PickleRef& args = call->items[1];
  ASSERT_TRUE(args->items[0]->Is(PickleValue::Kind::kPersistent));
  EXPECT_EQ(args->items[0]->items[0]->items[1]->text, "torch.FloatStorage");
  EXPECT_EQ(args->items[2]->items[1]->number, 4);  // size (3, 4)
  EXPECT_EQ(args->items[3]->items[0]->number, 4);  // stride (4, 1)
  EXPECT_EQ(reader.Position(), pickle.size());
}

TEST(Pickle, WhatIsNotAStateDictPickleIsRefusedNotRun) {
  auto error = [](const std::string& bytes) {
    try {
      PickleReader(bytes, "p").Read();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A list appended into itself (via the memo): a cycle, refused.
  EXPECT_THAT(error(std::string("\x80\x02]q\x00h\x00"
                                "a.",
                                9)),
              HasSubstr("contains itself"));
  // 70 nested lists: deeper than any state dict.
  std::string deep = "\x80\x02";
  for (int i = 0; i < 70; ++i)
    deep += "]";
  for (int i = 0; i < 69; ++i)
    deep += "a";
  EXPECT_THAT(error(deep + "."), HasSubstr("nested more than 64 deep"));
  // Protocol 0 text opcodes and unknown ones are outside the subset.
  EXPECT_THAT(error("I42\n."), HasSubstr("outside the subset"));
  EXPECT_THAT(error(std::string("\x80\x02X\xff\xff\xff\x7f", 8)), HasSubstr("past the end"));
  EXPECT_THAT(error(std::string("\x80\x02h\x05.", 5)), HasSubstr("never stored"));
  EXPECT_THAT(error("."), HasSubstr("empty stack"));
}

}  // namespace
}  // namespace saturn::engine
