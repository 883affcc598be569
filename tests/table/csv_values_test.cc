// A table's field values (table/csv_values.h): numbers read to the same
// double as strtod (the reader Saturn had before), bit for bit, and the
// same values missing or not a number.
#include "table/csv_values.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace saturn::table {
namespace {

// The reference: the reader's former strtod code.
bool StrtodNumber(const std::string& v, double* out) {
  const char* begin = v.c_str();
  char* end = nullptr;
  double d = std::strtod(begin, &end);
  if (end == begin) return false;
  while (*end != '\0' && std::isspace(static_cast<unsigned char>(*end)))
    ++end;
  if (*end != '\0' || !std::isfinite(d)) return false;
  *out = d;
  return true;
}

bool FormerIsMissing(const std::string& v) {
  std::string lower;
  for (char c : v)
    if (!std::isspace(static_cast<unsigned char>(c))) lower += static_cast<char>(std::tolower(c));
  return lower.empty() || lower == "na" || lower == "nan" || lower == "null";
}

void ExpectSameNumber(const std::string& v) {
  double want = -7, got = -7;
  bool want_ok = StrtodNumber(v, &want);
  bool got_ok = ParseTableNumber(v, &got);
  ASSERT_EQ(got_ok, want_ok) << '"' << v << '"';
  if (want_ok) {
    ASSERT_EQ(std::memcmp(&got, &want, sizeof(double)), 0) << '"' << v << "\": " << got;
  }
  EXPECT_EQ(IsMissingValue(v), FormerIsMissing(v)) << '"' << v << '"';
}

TEST(TableNumbers, AreReadAsStrtodReadsThem) {
  for (const char* v : {"0",
                        "-0",
                        "+0",
                        "0.0",
                        "-0.0",
                        "1",
                        "-1",
                        "+1",
                        "1.5",
                        ".5",
                        "-.5",
                        "5.",
                        "-5.",
                        ".",
                        "-",
                        "+",
                        "",
                        " ",
                        "1e5",
                        "1E5",
                        "1e+5",
                        "1e-5",
                        "1e",
                        "1e+",
                        "1.e3",
                        ".e3",
                        "e3",
                        "1.2.3",
                        "1,5",
                        " 1.5",
                        "1.5 ",
                        "\t-2\n",
                        "1 2",
                        "0x10",
                        "0x1p3",
                        "inf",
                        "-inf",
                        "Infinity",
                        "nan",
                        "NaN",
                        "NA",
                        "null",
                        "n a",
                        " Null ",
                        "nul",
                        "1e400",
                        "-1e400",
                        "1e-400",
                        "4.9e-324",
                        "2.2250738585072014e-308",
                        "1.7976931348623157e308",
                        "9007199254740993",
                        "9007199254740992",
                        "12345678901234567890",
                        "0.1",
                        "0.3",
                        "123456789012345678",
                        "1234567890123456789",
                        "00000000000000000001.5",
                        "1e22",
                        "1e23",
                        "1e-22",
                        "1e-23",
                        "3.14159265358979323846",
                        "-0.287959",
                        "1.03579",
                        "1_000",
                        "1e0000005",
                        "1e1000000",
                        "0e999999",
                        "٣",
                        "1\xC2\xA0"})
    ExpectSameNumber(v);
  ExpectSameNumber(std::string("1\0x", 3));  // a NUL ends the text, as strtod sees it
}

TEST(TableNumbers, RandomDecimalsAreReadAsStrtodReadsThem) {
  std::mt19937_64 gen(11);
  auto digits = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i)
      s += static_cast<char>('0' + gen() % 10);
    return s;
  };
  for (int t = 0; t < 300000; ++t) {
    std::string v;
    if (gen() % 4 == 0) v += gen() % 2 ? "-" : "+";
    v += digits(static_cast<int>(gen() % 12));
    if (gen() % 3 != 0) v += "." + digits(static_cast<int>(gen() % 14));
    if (gen() % 4 == 0) {
      v += gen() % 2 ? "e" : "E";
      if (gen() % 2) v += gen() % 2 ? "-" : "+";
      v += std::to_string(gen() % 40);
    }
    ExpectSameNumber(v);
  }
  std::uniform_real_distribution<double> real(-1e6, 1e6);
  char buffer[64];
  for (int t = 0; t < 200000; ++t) {  // as a program writes them
    const char* format = t % 3 == 0 ? "%g" : t % 3 == 1 ? "%.17g" : "%.6f";
    std::snprintf(buffer, sizeof(buffer), format, real(gen) * std::pow(10.0, gen() % 20 - 12.0));
    ExpectSameNumber(buffer);
  }
}

TEST(TableValues, BlanksAreWhitespaceOnly) {
  EXPECT_TRUE(IsBlankValue(""));
  EXPECT_TRUE(IsBlankValue(" \t"));
  EXPECT_FALSE(IsBlankValue(" a "));
}

}  // namespace
}  // namespace saturn::table
