// The CSV read in parts at once (table/table_reader.h): the same rows,
// labels, groups, table and first error as one reader reading it in order,
// whatever the parts, line ends, blank lines and errors.
#include "table/table_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"

namespace saturn::table {
namespace {

using ::testing::HasSubstr;

// What the parts hold, one row after another, or the error.
struct Flat {
  std::vector<uint32_t> features, labels;  // bits: NaN compares
  std::vector<std::string> label_of, group_of;
  std::vector<std::string> label_strings, group_names;
  int first_non_numeric_line = 0;
  std::string first_non_numeric, error;
};

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

Flat Read(const TableSpec& spec, const std::string& csv, size_t parts) {
  Flat out;
  try {
    RawRows raw = ReadRawRows(spec, csv, "w.yaml", 3, "tasks[0].data", parts);
    for (const RawPart& p : raw.parts) {
      for (float f : p.features)
        out.features.push_back(Bits(f));
      for (size_t i = 0; i < p.Rows(); ++i) {
        out.labels.push_back(Bits(p.label_values[i]));
        int32_t id = p.label_ids.empty() ? -1 : p.label_ids[i];
        out.label_of.push_back(id < 0 ? "-" : raw.label_strings[static_cast<size_t>(id)]);
        out.group_of.push_back(raw.group_names[static_cast<size_t>(p.group_ids[i])]);
      }
    }
    // At kMaxClasses distinct labels they are no class (an error follows):
    // the ids are not kept up then.
    if (raw.label_strings.size() >= kMaxClasses) out.label_of.clear();
    out.label_strings = raw.label_strings;
    out.group_names = raw.group_names;
    out.first_non_numeric_line = raw.first_non_numeric_line;
    out.first_non_numeric = raw.first_non_numeric;
    GroupedTable t = GroupedTableOf(spec, raw);
    for (float f : t.features)  // the table too, as one list
      out.features.push_back(Bits(f));
    for (float f : t.labels)
      out.labels.push_back(Bits(f));
    for (const TableGroup& g : t.groups)
      out.group_of.push_back(g.name + "/" + std::to_string(g.train_rows));
  } catch (const InputError& e) {
    out.error = e.what();
  }
  return out;
}

void ExpectSameInParts(const TableSpec& spec, const std::string& csv) {
  Flat one = Read(spec, csv, 1);
  for (size_t parts : {2, 3, 7}) {
    Flat many = Read(spec, csv, parts);
    SCOPED_TRACE(::testing::Message() << parts << " parts");
    EXPECT_EQ(many.error, one.error);
    EXPECT_EQ(many.features, one.features);
    EXPECT_EQ(many.labels, one.labels);
    EXPECT_EQ(many.label_of, one.label_of);
    EXPECT_EQ(many.group_of, one.group_of);
    EXPECT_EQ(many.label_strings, one.label_strings);
    EXPECT_EQ(many.group_names, one.group_names);
    EXPECT_EQ(many.first_non_numeric_line, one.first_non_numeric_line);
    EXPECT_EQ(many.first_non_numeric, one.first_non_numeric);
  }
}

TableSpec Spec(const std::string& task = "") {
  TableSpec s;
  s.path = "t.csv";
  s.features = {"x", "y"};
  s.label = "z";
  s.group_by = "g";
  s.task = task;
  s.min_group_rows = 1;
  return s;
}

// A table of `rows` rows in groups a..e, with `ends` line ends, blank lines
// now and then, and `bad` rows' values replaced by bad ones.
std::string Csv(std::mt19937& gen, int rows, const std::string& label_kind,
                const std::vector<std::string>& ends, int bad) {
  std::string csv = "g,x,y,z" + ends[0];
  const char* bad_values[] = {"Mon", "", "NA", " ", "1,2,3,4"};
  std::vector<int> bad_rows;
  for (int i = 0; i < bad; ++i)
    bad_rows.push_back(static_cast<int>(gen() % static_cast<unsigned>(rows)));
  for (int i = 0; i < rows; ++i) {
    std::string g(1, static_cast<char>('a' + gen() % 5));
    std::string x =
        std::to_string(static_cast<int>(gen() % 1000) - 500) + "." + std::to_string(gen() % 100);
    std::string y = std::to_string(gen() % 7);
    std::string z = label_kind == "text"    ? "c" + std::to_string(gen() % 4)
                    : label_kind == "stray" ? (gen() % 50 == 0 ? "?" : std::to_string(i))
                                            : std::to_string(gen() % 3) + ".5";
    for (int b : bad_rows) {
      if (b != i) continue;
      const char* v = bad_values[gen() % 5];
      (gen() % 4 == 0 ? g : gen() % 3 == 0 ? z : x) = v;
    }
    csv += g + "," + x + "," + y + "," + z + ends[gen() % ends.size()];
    if (gen() % 40 == 0) csv += ends[0];  // a blank line
  }
  if (gen() % 2) csv.resize(csv.size() - 1);  // a last line without its end (or with a CR)
  return csv;
}

TEST(TableParts, ReadAsOneReaderReadsInOrder) {
  std::mt19937 gen(5);
  const std::vector<std::vector<std::string>> ends = {{"\n"}, {"\r\n"}, {"\n", "\r\n", "\r"}};
  for (int t = 0; t < 300; ++t) {
    const std::string kinds[] = {"number", "text", "stray"};
    const std::string& kind = kinds[t % 3];
    std::string csv = Csv(gen, 1 + static_cast<int>(gen() % 300), kind, ends[t % 3],
                          t % 4 == 0 ? 0 : static_cast<int>(gen() % 3));
    SCOPED_TRACE(csv.substr(0, 200));
    ExpectSameInParts(Spec(), csv);
    ExpectSameInParts(Spec(t % 2 ? "classification" : "regression"), csv);
  }
}

TEST(TableParts, ErrorsNameTheLineOfTheWholeFile) {
  std::string csv = "g,x,y,z\r\n";
  for (int i = 0; i < 100; ++i)
    csv += "a,1,2,3" + std::string(i % 3 ? "\n" : "\r\n") + (i % 10 == 0 ? "\r\n" : "");
  std::string bad = csv + "a,1,x,3\n" + csv.substr(9) + "a,1,2\n";
  for (size_t parts : {1, 2, 5}) {
    Flat f = Read(Spec(), bad, parts);
    EXPECT_THAT(f.error, HasSubstr("t.csv:112: y: feature is not a number: 'x'")) << parts;
  }
  EXPECT_EQ(ReadRawRows(Spec(), csv + csv.substr(9), "w.yaml", 3, "d", 5).parts.size(), 5u);
  Flat f = Read(Spec("regression"), csv + csv.substr(9) + "a,1,2,q\n", 4);
  EXPECT_THAT(f.error, HasSubstr("t.csv:222: z: a regression label must be a number, got 'q'"));
}

TEST(TableParts, ManyLabelsAreTheSameErrorInParts) {
  std::string csv = "g,x,y,z\n";
  for (int i = 0; i < 12000; ++i)
    csv += "a,1,2," + (i == 7000 ? std::string("?") : std::to_string(i % 10500)) + "\n";
  for (const char* task : {"", "classification"})
    ExpectSameInParts(Spec(task), csv);
  EXPECT_THAT(Read(Spec(), csv, 3).error,
              HasSubstr("t.csv:7002: z: '?' is not a number, which makes the label a class, but "
                        "it has 10000 or more distinct values"));
  EXPECT_THAT(Read(Spec("classification"), csv, 3).error,
              HasSubstr("has 10000 or more distinct values: too many classes"));
}

TEST(TableParts, AQuotedFieldKeepsTheTextOnePart) {
  std::string csv = "g,x,y,z\n";
  for (int i = 0; i < 50; ++i)
    csv += "\"a\n,b\",1,2," + std::to_string(i) + "\n";
  RawRows raw = ReadRawRows(Spec(), csv, "w.yaml", 3, "tasks[0].data", 4);
  EXPECT_EQ(raw.parts.size(), 1u);
  ASSERT_EQ(raw.group_names.size(), 1u);
  EXPECT_EQ(raw.group_names[0], "a\n,b");
  ExpectSameInParts(Spec(), csv);
}

}  // namespace
}  // namespace saturn::table
