// The dashboard's files are in the binary byte for byte (compared with the
// files in the source tree, read at test time) and looked up by exact name.
#include "service/dashboard.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/format.h"
#include "common/fs.h"
#include "common/process.h"
#include "contracts/plan_status.h"
#include "embedded_files.h"
#include "tests/testing/test_dir.h"

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

// Node.js on the PATH, or "".
std::string FindNode() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    for (const char* name : {"node", "nodejs"}) {
      std::string candidate = dir + "/" + name;
      if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return "";
}

// The page's function `name`, from "function name(" to its closing brace.
std::string PageFunction(const std::string& name) {
  std::string_view page = FindDashboardFile("index.html")->body;
  size_t at = page.find("function " + name + "(");
  if (at == std::string_view::npos) return "";
  size_t end = page.find("\n  }\n", at);
  return end == std::string_view::npos ? "" : std::string(page.substr(at, end + 4 - at));
}

// Durations across every unit and each unit's edges, and some negative.
std::vector<double> DurationSamples() {
  std::vector<double> v = {0,      0.0049, 0.005,  0.0949, 0.095, 0.0999, 0.25,
                           0.35,   59.94,  59.95,  59.97,  60,    3599.4, 3599.5,
                           3599.6, 259169, 259171, 1e9,    -0.5,  -125};
  for (double x = 1e-4; x < 1e7; x *= 1.0173)
    v.push_back(x);
  for (double x = 0; x < 130; x += 0.0137)
    v.push_back(x);
  for (double x = 3500; x < 3700; x += 0.173)
    v.push_back(x);
  for (double x = 258900; x < 259500; x += 1.37)
    v.push_back(x);
  return v;
}

// The page's functions `names` and then `script` run in Node.js: its
// standard output, or nullopt without Node.js (a failure is reported).
std::optional<std::string> RunPageFunctions(const std::vector<std::string>& names,
                                            const std::string& script) {
  std::string node = FindNode();
  if (node.empty()) return std::nullopt;
  std::string program;
  for (const std::string& name : names) {
    std::string function = PageFunction(name);
    EXPECT_FALSE(function.empty()) << "the page has no function " << name;
    program += function + "\n";
  }
  std::string dir = test::OwnTestDir("dashboard_functions");
  std::filesystem::create_directories(dir);
  WriteFileAtomic(dir + "/check.js", program + script + "\n");
  ProcessSpec spec;
  spec.argv = {node, dir + "/check.js"};
  spec.stdout_path = dir + "/out.txt";
  spec.stderr_path = dir + "/err.txt";
  std::filesystem::remove(spec.stdout_path);
  int code = ExitCode(Process::Spawn(spec).Wait());
  EXPECT_EQ(code, 0) << ReadFile(dir + "/err.txt");
  return ReadFile(spec.stdout_path);
}

// Every duration on the page reads as the terminal writes it: the page's
// formatDuration, run in Node.js, gives FormatDuration's text for each
// sample, and the page has no clock format of its own ("0:19").
TEST(Dashboard, DurationsReadAsTheTerminalWritesThem) {
  std::string_view page = FindDashboardFile("index.html")->body;
  EXPECT_EQ(page.find("function clock("), std::string_view::npos);
  EXPECT_EQ(page.find("function duration("), std::string_view::npos);
  EXPECT_EQ(page.find("padStart(2"), std::string_view::npos) << "a clock format of its own";
  std::vector<double> samples = DurationSamples();
  std::string values;
  for (double x : samples) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g,", x);
    values += buf;
  }
  std::optional<std::string> out = RunPageFunctions(
      {"formatDuration"}, "console.log([" + values + "].map(formatDuration).join(\"\\n\"));");
  if (!out) GTEST_SKIP() << "no Node.js on the PATH to run the page's function";
  std::stringstream lines(*out);
  size_t differ = 0, i = 0;
  for (std::string line; std::getline(lines, line) && i < samples.size(); ++i) {
    if (line == FormatDuration(samples[i])) continue;
    if (++differ <= 10) {
      ADD_FAILURE() << samples[i] << ": page " << line << ", terminal "
                    << FormatDuration(samples[i]);
    }
  }
  EXPECT_EQ(i, samples.size()) << "the page's function gave fewer lines than samples";
  EXPECT_EQ(differ, 0u);
}

// The plan card compares Saturn's plan with current practice from when the
// plan was made (the baselines' from_s): the same work planned after any
// idle time reads the same, after saying when.
TEST(Dashboard, TheBaselineComparisonLeavesOutTimeBeforeThePlan) {
  std::optional<std::string> out = RunPageFunctions({"formatDuration", "baselineLine"}, R"(
for (const gap of [0, 5, 600, 100000]) {
  const cp = { makespan_s: gap + 250 };
  if (gap) cp.from_s = gap;
  console.log(baselineLine({ makespan_s: gap + 100, baselines: { "current-practice": cp } }));
})");
  if (!out) GTEST_SKIP() << "no Node.js on the PATH to run the page's function";
  const std::string same =
      "Saturn's plan takes ~1m40s; current practice (each task on a whole node, one after "
      "another) ~4m10s (<b>2.50× longer</b>)\n";
  EXPECT_EQ(*out, same + "From 5.0s on the run clock (the last submission or re-plan): " + same +
                      "From 10m00s on the run clock (the last submission or re-plan): " + same +
                      "From 27h47m on the run clock (the last submission or re-plan): " + same);
}

}  // namespace
}  // namespace saturn
