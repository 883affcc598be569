#include "table/group_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"

namespace saturn::table {
namespace {

using json = nlohmann::json;
constexpr char kMagic[] = "SATURN-GROUPS 1\n";
constexpr size_t kMagicBytes = sizeof(kMagic) - 1;

static_assert(sizeof(float) == 4, "float32 rows");

json HeaderJson(const GroupedTable& t) {
  json groups = json::array();
  for (const TableGroup& g : t.groups)
    groups.push_back(
        {{"name", g.name}, {"first", g.first}, {"rows", g.rows}, {"train_rows", g.train_rows}});
  return {{"source", t.source},         {"features", t.feature_names},
          {"label", t.label},           {"classification", t.classification},
          {"classes", t.classes},       {"rows", t.Rows()},
          {"groups", std::move(groups)}};
}

void LittleEndian64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

[[noreturn]] void Broken(const std::string& path, const std::string& why) {
  throw InputError(
      path, 0, "",
      "not a readable group file (" + why + "); delete it and Saturn writes it again from the CSV");
}

// Reads `bytes` bytes at `offset` into `out`.
void ReadAt(std::ifstream& in, const std::string& path, uint64_t offset, void* out, size_t bytes) {
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
  if (static_cast<size_t>(in.gcount()) != bytes) Broken(path, "cut short");
}

}  // namespace

void WriteGroupFile(const GroupedTable& t, const std::string& path) {
  std::string header = HeaderJson(t).dump();
  char length[8];
  LittleEndian64(header.size(), length);
  AtomicFileWriter out(path);
  out.Write(kMagic, kMagicBytes);
  out.Write(length, sizeof(length));
  out.Write(header.data(), header.size());
  out.Write(t.features.data(), t.features.size() * sizeof(float));
  out.Write(t.labels.data(), t.labels.size() * sizeof(float));
  out.Commit();
}

GroupFileHeader ReadGroupFileHeader(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot open the group file");
  char head[kMagicBytes + 8];
  ReadAt(in, path, 0, head, sizeof(head));
  if (std::memcmp(head, kMagic, kMagicBytes) != 0) Broken(path, "no SATURN-GROUPS header");
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = (length << 8) | static_cast<unsigned char>(head[kMagicBytes + i]);
  if (length > (uint64_t{1} << 32)) Broken(path, "header length");
  std::string text(length, '\0');
  ReadAt(in, path, sizeof(head), text.data(), text.size());
  GroupFileHeader h;
  h.data_offset = sizeof(head) + length;
  GroupedTable& t = h.table;
  try {
    json j = json::parse(text);
    t.source = j.at("source");
    t.feature_names = j.at("features").get<std::vector<std::string>>();
    t.label = j.at("label");
    t.classification = j.at("classification");
    t.classes = j.at("classes").get<std::vector<std::string>>();
    h.rows = j.at("rows");
    for (const json& g : j.at("groups"))
      t.groups.push_back({g.at("name"), g.at("first"), g.at("rows"), g.at("train_rows")});
  } catch (const json::exception& e) {
    Broken(path, std::string("header: ") + e.what());
  }
  for (size_t i = 0; i < t.groups.size(); ++i) {
    const TableGroup& g = t.groups[i];
    if (g.first < 0 || g.rows < 0 || g.first + g.rows > h.rows) Broken(path, "group rows");
    h.index.emplace(g.name, i);
  }
  return h;
}

const GroupFileHeader& CachedGroupFileHeader(const std::string& path) {
  static std::mutex mutex;
  // Never destroyed: readers may hold references until the process ends.
  static auto* headers = new std::map<std::string, std::unique_ptr<GroupFileHeader>>();
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<GroupFileHeader>& header = (*headers)[path];
  if (!header) header = std::make_unique<GroupFileHeader>(ReadGroupFileHeader(path));
  return *header;
}

GroupedTable ReadGroupRows(const std::string& path, const GroupFileHeader& h,
                           const std::string& group) {
  auto it = h.index.find(group);
  if (it == h.index.end()) {
    throw InputError(
        path, 0, "",
        "has no group " + Quote(group) + " (of " + std::to_string(h.table.groups.size()) + ")");
  }
  GroupedTable t = h.table;
  TableGroup g = t.groups[it->second];
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot open the group file");
  const uint64_t f = static_cast<uint64_t>(t.Features());
  const uint64_t first = static_cast<uint64_t>(g.first), n = static_cast<uint64_t>(g.rows);
  t.features.resize(n * f);
  t.labels.resize(n);
  ReadAt(in, path, h.data_offset + first * f * 4, t.features.data(), n * f * 4);
  ReadAt(in, path, h.data_offset + static_cast<uint64_t>(h.rows) * f * 4 + first * 4,
         t.labels.data(), n * 4);
  g.first = 0;
  t.groups = {g};
  return t;
}

GroupedTable ReadGroupFile(const std::string& path, const std::optional<std::string>& group) {
  GroupFileHeader h = ReadGroupFileHeader(path);
  if (group) return ReadGroupRows(path, h, *group);
  return std::move(h.table);
}

}  // namespace saturn::table
