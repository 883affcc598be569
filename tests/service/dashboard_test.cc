// The dashboard's files are in the binary byte for byte (compared with the
// files in the source tree, read at test time) and looked up by exact name.
#include "service/dashboard.h"

#include <gtest/gtest.h>

#include <string>

#include "embedded_files.h"
#include "contracts/plan_status.h"

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

}  // namespace
}  // namespace saturn
