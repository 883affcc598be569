// The dashboard's files are in the binary byte for byte (compared with the
// files in the source tree, read at test time) and looked up by exact name.
#include "service/dashboard.h"

#include <gtest/gtest.h>

#include <string>

#include "contracts/plan_status.h"
#include "embedded_files.h"

namespace saturn {
namespace {

TEST(Dashboard, EveryFileIsEmbeddedByteForByte) {
  ExpectAllEmbedded(SATURN_DASHBOARD_DIR);
}

TEST(Dashboard, UnknownNamesAreNotFound) {
  for (const char* name :
       {"", "index", "index.htm", "INDEX.HTML", "/index.html", "./index.html", "../index.html",
        "dashboard/index.html", "index.html/", "CMakeLists.txt", "missing.js"}) {
    EXPECT_EQ(FindDashboardFile(name), nullptr) << "'" << name << "'";
  }
  // A name is compared whole, embedded NULs included.
  EXPECT_EQ(FindDashboardFile(std::string_view("index.html\0", 11)), nullptr);
}

TEST(Dashboard, PageIsSelfContained) {
  // No CDN, no external fonts: the page loads nothing from another origin.
  std::string_view page = FindDashboardFile("index.html")->body;
  for (const char* external : {"http://", "https://", "//cdn", "@import url("}) {
    size_t at = page.find(external);
    // The SVG namespace URI is an identifier, never fetched.
    while (at != std::string_view::npos && page.substr(at).rfind("http://www.w3.org/", 0) == 0) {
      at = page.find(external, at + 1);
    }
    EXPECT_EQ(at, std::string_view::npos) << "the page refers to " << external;
  }
}

// The page says a plan's status in the words the terminal uses (never
// `time_limit`): its table holds DescribePlanStatus's words for each status.
TEST(Dashboard, PlanStatusesReadAsTheTerminalSaysThem) {
  std::string_view page = FindDashboardFile("index.html")->body;
  for (const char* status : {"optimal", "feasible", "time_limit", "infeasible"}) {
    std::string entry = std::string(status) + ": \"" + DescribePlanStatus(status) + "\",";
    EXPECT_NE(page.find(entry), std::string_view::npos) << "the page has no " << entry;
  }
  EXPECT_NE(page.find("planStatus(plan.status)"), std::string_view::npos);
  EXPECT_EQ(page.find("(plan.status || \"\")"), std::string_view::npos)
      << "the plan card shows the raw status";
}

// The plan card never says "(within 0.0%)" beside "not proven optimal":
// the gap reads as `saturn plan` says it, and the page's function has the
// C++ function's cases.
TEST(Dashboard, TheGapToTheBoundNeverReadsAsZeroUnlessItIs) {
  EXPECT_EQ(DescribeGapToBound(100, 100), "at the lower bound");
  EXPECT_EQ(DescribeGapToBound(100.0001, 100), "within 0.1% of the lower bound");
  EXPECT_EQ(DescribeGapToBound(100.04, 100), "within 0.1% of the lower bound");
  EXPECT_EQ(DescribeGapToBound(100.1, 100), "within 0.1% of the lower bound");
  EXPECT_EQ(DescribeGapToBound(107.21, 100), "within 7.3% of the lower bound");
  EXPECT_EQ(DescribeGapToBound(250, 100), "within 150.0% of the lower bound");
  std::string_view page = FindDashboardFile("index.html")->body;
  for (const char* line :
       {"if (!(gap > 1e-7)) return \"at the lower bound\";",
        "if (gap < 0.1) return \"within 0.1% of the lower bound\";",
        "return \"within \" + (Math.ceil(gap * 10 - 1e-9) / 10).toFixed(1) + \"% of the lower "
        "bound\";",
        "gapToBound(plan.makespan_s, plan.lower_bound_s)"}) {
    EXPECT_NE(page.find(line), std::string_view::npos) << "the page has no " << line;
  }
  EXPECT_EQ(page.find("\" (within \" + (100 *"), std::string_view::npos)
      << "the plan card rounds the gap itself";
}

}  // namespace
}  // namespace saturn
