// The embedding itself (cmake/embed_dashboard.cmake) on files made to break
// it: a C++ literal's delimiters and escapes, CRLF, non-ASCII text, every
// byte value including NUL, an empty file. This binary links the library
// generated from tests/service/embed_fixture/, not the dashboard's.
#include <gtest/gtest.h>

#include <string>

#include "embedded_files.h"

namespace saturn {
namespace {

TEST(DashboardEmbed, AwkwardFilesSurviveByteForByte) {
  ExpectAllEmbedded(SATURN_DASHBOARD_DIR);
}

TEST(DashboardEmbed, BinaryAndEmptyFiles) {
  const DashboardFile* bytes = FindDashboardFile("bytes.png");
  ASSERT_NE(bytes, nullptr);
  ASSERT_EQ(bytes->body.size(), 259u);  // not cut at the first NUL
  for (int i = 0; i < 256; ++i)
    EXPECT_EQ(static_cast<unsigned char>(bytes->body[i]), i);
  EXPECT_EQ(bytes->body.substr(256), std::string_view("\0\0\xff", 3));

  const DashboardFile* empty = FindDashboardFile("empty.js");
  ASSERT_NE(empty, nullptr);
  EXPECT_TRUE(empty->body.empty());
  EXPECT_EQ(empty->content_type, "text/javascript; charset=utf-8");
}

}  // namespace
}  // namespace saturn
