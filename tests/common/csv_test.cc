// The CSV reader (common/csv.h): CsvReader's views and ParseCsv's records
// are the same as a plain character-by-character reader's (the one Saturn
// had before), on hand-picked texts and on random ones; line ends, quotes
// and errors as documented.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/csv.h"
#include "common/error.h"

namespace saturn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The reference: records (line, fields) or the error's message.
struct Parsed {
  std::vector<CsvRecord> records;
  std::string error;
};

Parsed Reference(std::string_view text) {
  Parsed out;
  CsvRecord record;
  std::string field;
  int line = 1;
  record.line = 1;
  bool quoted = false, field_was_quoted = false;
  auto end_record = [&]() {
    record.fields.push_back(field);
    field.clear();
    field_was_quoted = false;
    if (record.fields.size() != 1 || !record.fields[0].empty()) out.records.push_back(record);
    record.fields.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        line += c == '\n';
        field += c;
      }
    } else if (c == '"' && field.empty() && !field_was_quoted) {
      quoted = field_was_quoted = true;
    } else if (c == ',') {
      record.fields.push_back(field);
      field.clear();
      field_was_quoted = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_record();
      record.line = ++line;
    } else if (field_was_quoted) {
      out.error = "t.csv:" + std::to_string(line) + ": unexpected character after a closing quote";
      return out;
    } else {
      field += c;
    }
  }
  if (quoted) {
    out.error = "t.csv:" + std::to_string(record.line) + ": unterminated quoted field";
    return out;
  }
  if (!field.empty() || !record.fields.empty() || field_was_quoted) end_record();
  return out;
}

// What CsvReader reads, as the reference writes it.
Parsed Read(std::string_view text) {
  Parsed out;
  try {
    CsvReader reader(text, "t.csv");
    for (CsvRow row; reader.Next(row);)
      out.records.push_back({row.line, {row.fields.begin(), row.fields.end()}});
  } catch (const InputError& e) {
    out.error = e.what();
  }
  return out;
}

void ExpectSame(std::string_view text) {
  Parsed want = Reference(text), got = Read(text);
  SCOPED_TRACE(::testing::PrintToString(std::string(text)));
  if (!want.error.empty()) {
    EXPECT_THAT(got.error, HasSubstr(want.error));
    return;
  }
  EXPECT_EQ(got.error, "");
  ASSERT_EQ(got.records.size(), want.records.size());
  for (size_t i = 0; i < want.records.size(); ++i) {
    EXPECT_EQ(got.records[i].line, want.records[i].line) << i;
    EXPECT_EQ(got.records[i].fields, want.records[i].fields) << i;
  }
  try {
    CsvTable table = ParseCsv(text, "t.csv");
    ASSERT_EQ(table.records.size(), want.records.size());
    for (size_t i = 0; i < want.records.size(); ++i)
      EXPECT_EQ(table.records[i].fields, want.records[i].fields) << i;
  } catch (const InputError& e) {
    ADD_FAILURE() << e.what();
  }
}

TEST(CsvReader, ReadsAsThePlainReaderDoes) {
  for (const char* text : {"",
                           "\n",
                           "a",
                           "a,b",
                           "a,b\n",
                           "a,b\r\nc,d\r\n",
                           "a\rb\r",
                           "a\r\r\nb",
                           "a,\n,b\n,\n",
                           "\"\"\n\"\",\n",
                           "\"a,b\",\"c\nd\"\ne\n",
                           "\"say \"\"hi\"\"\",x",
                           "\"\"\"\"",
                           "a\"b,c\"\n",
                           "\"a\"b\n",
                           "\"a\"\"\n",
                           "x\n\"open\nrest",
                           "\"a\r\nb\"\r\nc",
                           "  \"a\",b",
                           "a,b\n\n\n\r\n\rc",
                           "\"a\"\"\"\"b\",\"c\"\"\""})
    ExpectSame(text);
}

TEST(CsvReader, ReadsRandomTextsAsThePlainReaderDoes) {
  std::mt19937 gen(7);
  const std::string alphabet = "ab1 ,,\"\"\n\r";
  for (int t = 0; t < 20000; ++t) {
    std::string text(gen() % 24, ' ');
    for (char& c : text)
      c = alphabet[gen() % alphabet.size()];
    ExpectSame(text);
  }
}

TEST(CsvReader, GivesViewsLineNumbersAndALastLineWithoutNewline) {
  std::string text = "h1,h2\r\n\"a,\"\"b\"\"\",\"c\nd\"\r\n\r\nplain,\"\"\nlast,1";
  CsvReader reader(text, "t.csv");
  CsvRow row;
  ASSERT_TRUE(reader.Next(row));
  EXPECT_THAT(row.fields, ElementsAre("h1", "h2"));
  EXPECT_EQ(row.fields[0].data(), text.data());  // a view, not a copy
  ASSERT_TRUE(reader.Next(row));
  EXPECT_THAT(row.fields, ElementsAre("a,\"b\"", "c\nd"));
  EXPECT_EQ(row.line, 2);
  ASSERT_TRUE(reader.Next(row));
  EXPECT_THAT(row.fields, ElementsAre("plain", ""));
  EXPECT_EQ(row.line, 5);
  ASSERT_TRUE(reader.Next(row));
  EXPECT_THAT(row.fields, ElementsAre("last", "1"));
  EXPECT_EQ(row.line, 6);
  EXPECT_FALSE(reader.Next(row));
}

TEST(CsvReader, ACharacterAfterAClosingQuoteNamesItsLine) {
  try {
    ParseCsv("a\n\"x\ny\"z\n", "bad.csv");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.csv:3: unexpected character after a closing quote"));
  }
}

}  // namespace
}  // namespace saturn
