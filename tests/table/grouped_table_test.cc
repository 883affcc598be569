// Grouped tables (table/grouped_table.h, group_file.h): each group holds
// exactly its CSV rows, split as documented, and bad tables are one error
// naming the file, line, column or group.
#include "table/grouped_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "table/group_file.h"
#include "tests/testing/test_dir.h"

namespace saturn::table {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class GroupedTableTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::OwnTestDir("table"); }
  TableSpec Spec(const std::string& csv) {
    TableSpec s;
    s.path = dir_ + "/t.csv";
    WriteFileAtomic(s.path, csv);
    s.features = {"x", "y"};
    s.label = "z";
    s.group_by = "g";
    s.min_group_rows = 2;
    return s;
  }
  std::string ErrorOf(const TableSpec& s) {
    try {
      ReadGroupedTable(s, "w.yaml", 7, "tasks[0].data");
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }
  std::string dir_;
};

// A CSV of `groups` groups, group k with 3 + k rows: x = row, y = 2 row,
// z = x + y, written interleaved.
std::string Csv(int groups) {
  std::string csv = "g,x,y,z\n";
  int row = 0;
  for (int i = 0; i < 3 + groups; ++i)
    for (int k = 0; k < groups; ++k)
      if (i < 3 + k) {
        csv += "grp" + std::to_string(k) + "," + std::to_string(row) + "," +
               std::to_string(2 * row) + "," + std::to_string(3 * row) + "\n";
        ++row;
      }
  return csv;
}

TEST_F(GroupedTableTest, EachGroupHoldsExactlyItsRowsSplitAsDocumented) {
  TableSpec spec = Spec(Csv(4));
  spec.holdout = 0.25;
  GroupedTable t = ReadGroupedTable(spec, "w.yaml", 7, "tasks[0].data");
  EXPECT_FALSE(t.classification);  // all-numeric label: regression
  EXPECT_EQ(t.Outputs(), 1);
  ASSERT_EQ(t.groups.size(), 4u);
  // Independently: which x values each group has in the CSV.
  std::map<std::string, std::vector<float>> expected;
  int row = 0;
  for (int i = 0; i < 7; ++i)
    for (int k = 0; k < 4; ++k)
      if (i < 3 + k) expected["grp" + std::to_string(k)].push_back(static_cast<float>(row++));
  int64_t next = 0;
  for (const TableGroup& g : t.groups) {
    EXPECT_EQ(g.first, next);
    next += g.rows;
    std::vector<float> xs;
    for (int64_t r = g.first; r < g.first + g.rows; ++r) {
      xs.push_back(t.Row(r)[0]);
      EXPECT_EQ(t.Row(r)[1], 2 * t.Row(r)[0]);
      EXPECT_EQ(t.labels[static_cast<size_t>(r)], 3 * t.Row(r)[0]);
    }
    std::sort(xs.begin(), xs.end());
    EXPECT_EQ(xs, expected[g.name]) << g.name;
    long held = std::lround(static_cast<double>(g.rows) * 0.25);
    EXPECT_EQ(g.EvalRows(), std::clamp<long>(held, 1, g.rows - 1)) << g.name;
  }
  // Seeded: the same split again, another with another seed.
  GroupedTable again = ReadGroupedTable(spec, "w.yaml", 7, "tasks[0].data");
  EXPECT_EQ(again.features, t.features);
  spec.split_seed = 99;
  EXPECT_NE(ReadGroupedTable(spec, "w.yaml", 7, "tasks[0].data").features, t.features);
}

TEST_F(GroupedTableTest, TextLabelsAreClassesAndIntegerClassesSortAsNumbers) {
  TableSpec spec = Spec("g,x,y,z\na,1,2,cat\na,3,4,dog\nb,5,6,cat\nb,7,8,ant\n");
  GroupedTable t = ReadGroupedTable(spec, "w.yaml", 7, "tasks[0].data");
  EXPECT_TRUE(t.classification);
  EXPECT_THAT(t.classes, ElementsAre("ant", "cat", "dog"));
  for (int64_t r = 0; r < t.Rows(); ++r) {
    float x = t.Row(r)[0];
    float want = x == 1 || x == 5 ? 1 : x == 3 ? 2 : 0;
    EXPECT_EQ(t.labels[static_cast<size_t>(r)], want) << x;
  }
  spec = Spec("g,x,y,z\na,1,2,10\na,3,4,2\nb,5,6,0\nb,7,8,2\n");
  spec.task = "classification";
  t = ReadGroupedTable(spec, "w.yaml", 7, "tasks[0].data");
  EXPECT_THAT(t.classes, ElementsAre("0", "2", "10"));
}

TEST_F(GroupedTableTest, BadTablesNameTheFileLineColumnOrGroup) {
  TableSpec spec = Spec("g,x,y,z\na,1,2,3\na,1,2,3\n");
  spec.group_by = "store";
  EXPECT_THAT(ErrorOf(spec), HasSubstr("w.yaml:7: tasks[0].data.group_by: column 'store' is not"));
  spec = Spec("g,x,y,z\na,1,2,3\na,Mon,2,3\n");
  EXPECT_THAT(ErrorOf(spec), HasSubstr("t.csv:3: x: feature is not a number: 'Mon'"));
  spec = Spec("g,x,y,z\na,1,2,3\na,1,,3\n");
  EXPECT_THAT(ErrorOf(spec), HasSubstr("t.csv:3: y: missing value"));
  // Finite as a double, inf as the float32 a model trains in.
  spec = Spec("g,x,y,z\na,1,2,3\na,1,-1e39,3\n");
  EXPECT_THAT(ErrorOf(spec), HasSubstr("t.csv:3: y: '-1e39' is beyond float32's range"));
  spec = Spec("g,x,y,z\na,1,2,3\na,1,2,4e38\n");
  EXPECT_THAT(ErrorOf(spec), HasSubstr("t.csv:3: z: '4e38' is beyond float32's range"));
  spec = Spec("g,x,y,z\na,1,2,3\na,1,2,3\nb,1,2,3\n");
  EXPECT_THAT(ErrorOf(spec), HasSubstr("1 of 2 groups have fewer than 2 rows"));
  EXPECT_THAT(ErrorOf(spec), HasSubstr("'b' (1)"));
  spec = Spec("g,x,y,z\na,1,2,3\na,1,2\n");
  EXPECT_THAT(ErrorOf(spec), HasSubstr("t.csv:3: has 3 fields; the header has 4"));
  spec = Spec("g,x,y,z\na,1,2,3\na,1,2,cat\n");
  spec.task = "regression";
  EXPECT_THAT(ErrorOf(spec), HasSubstr("t.csv:3: z: a regression label must be a number"));
  spec = Spec("g,x,y,z\n");
  EXPECT_THAT(ErrorOf(spec), HasSubstr("has a header but no rows"));
}

TEST_F(GroupedTableTest, StrayLabelsOneClassAndFeaturesThatAreTheLabelAreErrors) {
  std::string csv = "g,x,y,z\n";
  for (int i = 0; i < 150; ++i)
    csv += "a," + std::to_string(i) + ",1," + std::to_string(i * 0.5) + "\n";
  csv += "a,1,1,?\n";
  EXPECT_THAT(ErrorOf(Spec(csv)), HasSubstr("t.csv:152: z: '?' is not a number, which makes"));
  EXPECT_THAT(ErrorOf(Spec("g,x,y,z\na,1,2,cat\na,3,4,cat\n")),
              HasSubstr("z: has one class ('cat')"));
  TableSpec spec = Spec("g,x,y,z\na,1,2,3\na,1,2,3\n");
  spec.features = {"x", "z"};
  EXPECT_THAT(ErrorOf(spec), HasSubstr("tasks[0].data.features[1]: 'z' is the label column"));
}

TEST_F(GroupedTableTest, AByteOrderMarkSpacesAndAGroupNamedNaAreRead) {
  TableSpec spec = Spec("\xEF\xBB\xBFg, x, y, z\nNA,1,2,3\nNA,1,2,4\nnone,5,6,7\nnone,1,1,1\n");
  GroupedTable t = ReadGroupedTable(spec, "w.yaml", 7, "tasks[0].data");
  ASSERT_EQ(t.groups.size(), 2u);
  EXPECT_EQ(t.groups[0].name, "NA");
  EXPECT_EQ(t.groups[1].name, "none");
}

TEST_F(GroupedTableTest, QuotedFieldsLineEndsAndALastLineWithoutItsEndAreRead) {
  TableSpec spec = Spec(
      "g,x,y,z\r\n\"a,\nb\",1,2,3\r\n\"a,\nb\",\"4\",5,6\r\n\r\nc,7,8,9\rc,1e1,-.5, 2 \nc,3,4,5");
  GroupedTable t = ReadGroupedTable(spec, "w.yaml", 7, "tasks[0].data");
  ASSERT_EQ(t.groups.size(), 2u);
  EXPECT_EQ(t.groups[0].name, "a,\nb");
  EXPECT_EQ(t.groups[0].rows, 2);
  EXPECT_EQ(t.groups[1].rows, 3);
  std::vector<float> xs;
  for (int64_t r = 0; r < t.Rows(); ++r)
    xs.push_back(t.Row(r)[0] + t.Row(r)[1] + t.labels[static_cast<size_t>(r)]);
  std::sort(xs.begin(), xs.end());
  EXPECT_THAT(xs, ElementsAre(6, 11.5f, 12, 15, 24));
  spec = Spec("g,x,y,z\na,1,2,3\r\na,1,2,3\r\na,\"1\"x,2,3\n");
  EXPECT_THAT(ErrorOf(spec), HasSubstr("t.csv:4: unexpected character after a closing quote"));
  spec = Spec("g,x,y,z\na,1,2,3\r\r\na, 1 ,2,3\na,inf,2,3\n");
  EXPECT_THAT(ErrorOf(spec), HasSubstr("t.csv:5: x: feature is not a number: 'inf'"));
}

TEST_F(GroupedTableTest, TheGroupFileGivesEachGroupItsOwnRows) {
  GroupedTable t = ReadGroupedTable(Spec(Csv(3)), "w.yaml", 7, "tasks[0].data");
  std::string path = dir_ + "/t.groups";
  WriteGroupFile(t, path);
  GroupedTable head = ReadGroupFile(path);
  EXPECT_TRUE(head.features.empty());
  ASSERT_EQ(head.groups.size(), 3u);
  for (const TableGroup& g : t.groups) {
    GroupedTable one = ReadGroupFile(path, g.name);
    ASSERT_EQ(one.groups.size(), 1u);
    EXPECT_EQ(one.groups[0].train_rows, g.train_rows);
    EXPECT_EQ(one.Rows(), g.rows);
    for (int64_t r = 0; r < g.rows; ++r) {
      EXPECT_EQ(one.Row(r)[0], t.Row(g.first + r)[0]);
      EXPECT_EQ(one.labels[static_cast<size_t>(r)], t.labels[static_cast<size_t>(g.first + r)]);
    }
  }
  EXPECT_THROW(ReadGroupFile(path, "nope"), InputError);
  WriteFileAtomic(path, "not a group file");
  EXPECT_THROW(ReadGroupFile(path), InputError);
}

TEST(GroupNames, AreFitForTaskNames) {
  EXPECT_EQ(GroupNameForTask("new york/5"), "new_york_5");
  EXPECT_EQ(GroupNameForTask(""), "_");
  EXPECT_EQ(GroupNameForTask("a-b.c_d"), "a-b.c_d");
}

}  // namespace
}  // namespace saturn::table
