// Sampled search spaces (contracts/search_space.h) and the tasks they make
// with and without a sweep (contracts/task_variants.h, workload.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "contracts/search_space.h"
#include "contracts/workload.h"
#include "tests/testing/test_dir.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// A task's search read from YAML (the task a map with `search:`).
SearchSpace SpaceOf(const std::string& task) {
  YamlFields f(ParseYamlText(task, "w.yaml"), "w.yaml", "tasks[0]");
  return ReadSearchSpace(f, {});
}

std::vector<double> Numbers(const SearchSpace& space, size_t field = 0) {
  std::vector<double> out;
  for (const SearchSample& s : DrawSamples(space))
    out.push_back(std::stod(s.values[field].Scalar()));
  return out;
}

// The generator is the published splitmix64: its first numbers from seed 0.
TEST(SearchRandom, IsSplitmix64) {
  SearchRandom r(0);
  EXPECT_EQ(r.Next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(r.Next(), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(r.Next(), 0x06c45d188009454fULL);
}

// The log and exp of log_uniform, made of IEEE operations only, agree with
// the maths library's to about the last digit.
TEST(SearchRandom, LogAndExpAgreeWithTheMathsLibrary) {
  for (double x : {1e-300, 1e-10, 1e-5, 0.3, 0.70710678, 0.9999, 1.0, 1.0001, 2.0, 7.5, 1e9}) {
    EXPECT_NEAR(SearchLog(x), std::log(x), 4e-16 * std::max(1.0, std::fabs(std::log(x)))) << x;
  }
  for (double y : {-690.0, -20.0, -11.5, -1.0, -1e-9, 0.0, 0.34, 1.0, 3.3, 20.7, 700.0}) {
    EXPECT_NEAR(SearchExp(y) / std::exp(y), 1.0, 1e-15) << y;
  }
}

TEST(SearchSpace, SamplesAreReproducibleFromTheSeed) {
  const std::string space =
      "      space:\n"
      "        optimizer.lr: {log_uniform: [1.0e-5, 1.0e-2]}\n"
      "        batch_size: {choice: [8, 16, 32]}\n";
  auto draw = [&](const std::string& seed) {
    std::vector<std::string> out;
    for (const SearchSample& s : DrawSamples(SpaceOf("search:\n      samples: 8\n" + seed + space)))
      out.push_back(s.values[0].Scalar() + " " + s.values[1].Scalar());
    return out;
  };
  EXPECT_EQ(draw("      seed: 7\n"), draw("      seed: 7\n"));
  EXPECT_EQ(draw(""), draw("      seed: 0\n"));  // 0 by default
  EXPECT_NE(draw("      seed: 7\n"), draw("      seed: 8\n"));
  std::set<std::string> distinct;
  for (const std::string& s : draw("      seed: 7\n"))
    distinct.insert(s.substr(0, s.find(' ')));
  EXPECT_EQ(distinct.size(), 8u);  // 8 different learning rates
}

TEST(SearchSpace, ValuesStayWithinTheirBounds) {
  SearchSpace s = SpaceOf(
      "search:\n  samples: 2000\n  seed: 3\n  space:\n"
      "    a: {uniform: [-0.5, 0.25]}\n    b: {log_uniform: [3.0e-4, 3.0e-4]}\n"
      "    c: {int: [-2, 2]}\n    d: {log_uniform: [1.0e-8, 1.0e8]}\n");
  std::map<long, int> ints;
  for (const SearchSample& sample : DrawSamples(s)) {
    double a = std::stod(sample.values[0].Scalar());
    EXPECT_GE(a, -0.5);
    EXPECT_LE(a, 0.25);
    EXPECT_EQ(std::stod(sample.values[1].Scalar()), 3.0e-4);  // lo == hi: that value
    long c = std::stol(sample.values[2].Scalar());
    EXPECT_EQ(sample.values[2].Scalar(), std::to_string(c));  // an integer, as text
    ++ints[c];
    double d = std::stod(sample.values[3].Scalar());
    EXPECT_GE(d, 1.0e-8);
    EXPECT_LE(d, 1.0e8);
  }
  // Both ends of an int are drawn, and nothing past them.
  EXPECT_EQ(ints.size(), 5u);
  EXPECT_EQ(ints.begin()->first, -2);
  EXPECT_EQ(ints.rbegin()->first, 2);
  for (const auto& [value, count] : ints)
    EXPECT_GT(count, 300) << value;  // 400 expected each
}

// log_uniform is uniform in the logarithm: half the samples fall below the
// geometric mean of the bounds and each decade gets its share (a uniform
// draw over [1e-5, 1e-2] would put 3% below it).
TEST(SearchSpace, LogUniformSpreadsEvenlyOverTheDecades) {
  std::vector<double> lr =
      Numbers(SpaceOf("search:\n  samples: 1000\n  seed: 11\n  space:\n"
                      "    optimizer.lr: {log_uniform: [1.0e-5, 1.0e-2]}\n"));
  const double geometric_mean = std::sqrt(1.0e-5 * 1.0e-2);
  int below = 0;
  std::map<int, int> decades;
  for (double v : lr) {
    below += v < geometric_mean;
    ++decades[static_cast<int>(std::floor(std::log10(v)))];
  }
  // Binomial(1000, 1/2): standard deviation 15.8; 4 of them either side.
  EXPECT_GT(below, 437);
  EXPECT_LT(below, 563);
  ASSERT_EQ(decades.size(), 3u);  // 1e-5.., 1e-4.., 1e-3..
  for (const auto& [decade, count] : decades)
    EXPECT_NEAR(count, 333, 60) << decade;
  // uniform is uniform in the value: about half below the middle.
  std::vector<double> wd =
      Numbers(SpaceOf("search:\n  samples: 1000\n  space:\n"
                      "    optimizer.weight_decay: {uniform: [0, 0.1]}\n"));
  EXPECT_NEAR(std::count_if(wd.begin(), wd.end(), [](double v) { return v < 0.05; }), 500, 63);
}

TEST(SearchSpace, NamesShowTheValuesShortAndUnique) {
  std::vector<SearchSample> s = DrawSamples(SpaceOf(
      "search:\n  samples: 16\n  seed: 7\n  space:\n"
      "    optimizer.lr: {log_uniform: [1.0e-5, 1.0e-2]}\n    finetune.lora.rank: {int: [4, 32]}\n"
      "    batch_size: {choice: [8, 16]}\n"));
  std::set<std::string> names;
  for (const SearchSample& sample : s) {
    names.insert(sample.suffix);
    // "-lr<4 significant digits>-rank<int>-bs<choice>": "-lr0.0001234-rank17-bs8"
    EXPECT_TRUE(std::regex_match(sample.suffix, std::regex("-lr[0-9.e-]+-rank[0-9]+-bs(8|16)")))
        << sample.suffix;
    const std::string lr = sample.suffix.substr(3, sample.suffix.find("-rank") - 3);
    EXPECT_LE(lr.size(), 9u) << lr;
    const double drawn = std::stod(sample.values[0].Scalar());
    EXPECT_NEAR(std::stod(lr), drawn, drawn * 5e-4) << lr;
  }
  EXPECT_EQ(names.size(), 16u);
  // Samples that would share a name are told apart by their index.
  std::vector<SearchSample> same =
      DrawSamples(SpaceOf("search: {samples: 3, space: {batch_size: {choice: [8]}}}\n"));
  EXPECT_EQ(same[0].suffix, "-bs8-s0");
  EXPECT_EQ(same[2].suffix, "-bs8-s2");
}

class SearchWorkload : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::OwnTestDir("search_test");
    fs::create_directories(dir_ + "/data");
    WriteFileAtomic(dir_ + "/data/corpus.txt", std::string(1601, 'a'));
    WriteFileAtomic(dir_ + "/cluster.yaml", "nodes:\n  - {name: n0, gpus: 4}\n");
  }
  Workload Parse(const std::string& extra, long max_tasks = 0) {
    return ParseWorkload("cluster: cluster.yaml\ntasks:\n" + kTask + extra, "w.yaml", dir_, {},
                         max_tasks);
  }
  std::string ErrorOf(const std::string& extra, long max_tasks = 0) {
    try {
      Parse(extra, max_tasks);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  // Lines 3 to 9; `search:` is line 10, `samples:` 11, `space:` 12, the
  // space's first field 13.
  const std::string kTask =
      "  - name: gpt\n"
      "    model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}\n"
      "    data: {type: text, path: data/corpus.txt}\n"
      "    batch_size: 8\n"
      "    optimizer: {type: adamw, lr: 1.0e-4}\n"
      "    steps: 10\n"
      "    seed: 1\n";
  std::string dir_;
};

std::string Search(long samples, const std::string& fields) {
  return "    search:\n      samples: " + std::to_string(samples) + "\n      space:\n" + fields;
}

TEST_F(SearchWorkload, SampledTasksCarryTheirValuesAsTypedFields) {
  Workload w = Parse(Search(4,
                            "        optimizer.lr: {log_uniform: [1.0e-5, 1.0e-2]}\n"
                            "        optimizer.weight_decay: {uniform: [0.0, 0.1]}\n"
                            "        batch_size: {choice: [8, 16, 32]}\n"
                            "        precision: {choice: [fp32, bf16]}\n"));
  ASSERT_EQ(w.tasks.size(), 4u);
  std::set<std::string> names;
  for (const WorkloadTask& t : w.tasks) {
    names.insert(t.name);
    EXPECT_EQ(t.sweep, "gpt");
    EXPECT_TRUE(t.spec["optimizer"]["lr"].is_number_float());
    EXPECT_TRUE(t.spec["batch_size"].is_number_integer());  // a choice keeps its type
    EXPECT_EQ(t.spec["name"], t.name);
    ASSERT_EQ(t.varied.size(), 4u);
    EXPECT_EQ(t.varied[0].path, "optimizer.lr");
    EXPECT_EQ(t.varied[0].value, t.spec["optimizer"]["lr"]);
    EXPECT_TRUE(t.varied[0].sampled);
    EXPECT_EQ(t.varied[2].path, "batch_size");
    EXPECT_EQ(t.varied[2].value, t.spec["batch_size"]);
    EXPECT_EQ(t.varied[3].path, "precision");
    // fp32 is the default the worker's JSON leaves out: the value as written.
    EXPECT_EQ(t.varied[3].value, t.spec.value("precision", "fp32"));
    EXPECT_EQ(t.steps, 10);
  }
  EXPECT_EQ(names.size(), 4u);
  // The same workload, the same tasks.
  Workload again = Parse(Search(4,
                                "        optimizer.lr: {log_uniform: [1.0e-5, 1.0e-2]}\n"
                                "        optimizer.weight_decay: {uniform: [0.0, 0.1]}\n"
                                "        batch_size: {choice: [8, 16, 32]}\n"
                                "        precision: {choice: [fp32, bf16]}\n"));
  for (size_t i = 0; i < w.tasks.size(); ++i)
    EXPECT_EQ(again.tasks[i].spec, w.tasks[i].spec);
}

// Each grid point takes every sample, the samples varying fastest: the same
// learning rates at each batch size.
TEST_F(SearchWorkload, WithASweepEachGridPointTakesTheSameSamples) {
  Workload w = Parse("    sweep: {batch_size: [8, 16]}\n" +
                     Search(3, "        optimizer.lr: {log_uniform: [1.0e-5, 1.0e-2]}\n"));
  ASSERT_EQ(w.tasks.size(), 6u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(w.tasks[i].spec["batch_size"], 8);
    EXPECT_EQ(w.tasks[i + 3].spec["batch_size"], 16);
    EXPECT_EQ(w.tasks[i].spec["optimizer"]["lr"], w.tasks[i + 3].spec["optimizer"]["lr"]);
    EXPECT_EQ(w.tasks[i].name.substr(0, 8), "gpt-bs8-");
    EXPECT_EQ(w.tasks[i + 3].name.substr(8), w.tasks[i].name.substr(7));  // "-lr..."
    ASSERT_EQ(w.tasks[i].varied.size(), 2u);
    EXPECT_EQ(w.tasks[i].varied[0].path, "batch_size");
    EXPECT_FALSE(w.tasks[i].varied[0].sampled);
    EXPECT_TRUE(w.tasks[i].varied[1].sampled);
  }
  EXPECT_NE(w.tasks[0].spec["optimizer"]["lr"], w.tasks[1].spec["optimizer"]["lr"]);
  // Integers: seeds 1 to 3 for 5 samples, those drawn twice told apart.
  EXPECT_EQ(Parse(Search(5, "        seed: {int: [1, 3]}\n")).tasks.size(), 5u);
}

TEST_F(SearchWorkload, BadSpacesNameTheirField) {
  auto lr = [](const std::string& distribution) {
    return Search(2, "        optimizer.lr: " + distribution + "\n");
  };
  EXPECT_EQ(ErrorOf(lr("{log_uniform: [1.0e-2, 1.0e-5]}")),
            "w.yaml:13: tasks[0].search.space.optimizer.lr.log_uniform: expected lo <= hi, got "
            "[1.0e-2, 1.0e-5]");
  EXPECT_EQ(ErrorOf(lr("{log_uniform: [0, 1.0e-2]}")),
            "w.yaml:13: tasks[0].search.space.optimizer.lr.log_uniform: expected 0 < lo (a "
            "log-uniform draws the logarithm), got lo 0");
  EXPECT_EQ(ErrorOf(lr("{uniform: [1.0e-3]}")),
            "w.yaml:13: tasks[0].search.space.optimizer.lr.uniform: expected [lo, hi]");
  EXPECT_EQ(ErrorOf(Search(2, "        seed: {int: [1, 4.5]}\n")),
            "w.yaml:13: tasks[0].search.space.seed.int[1]: expected an integer, got '4.5'");
  EXPECT_EQ(ErrorOf(Search(2, "        batch_size: {choice: []}\n")),
            "w.yaml:13: tasks[0].search.space.batch_size.choice: expected a non-empty list of "
            "values");
  EXPECT_EQ(ErrorOf(lr("{loguniform: [1.0e-5, 1.0e-2]}")),
            "w.yaml:13: tasks[0].search.space.optimizer.lr: unknown distribution 'loguniform'; "
            "expected log_uniform, uniform, int or choice; did you mean 'log_uniform'?");
  EXPECT_THAT(ErrorOf(lr("{uniform: [0, 1], int: [0, 1]}")),
              HasSubstr("w.yaml:13: tasks[0].search.space.optimizer.lr: expected one "
                        "distribution"));
  EXPECT_EQ(ErrorOf(Search(2, "        name: {choice: [a, b]}\n")),
            "w.yaml:13: tasks[0].search.space.name: cannot search over name");
  EXPECT_EQ(ErrorOf(Search(2, "        sweep.x: {choice: [a, b]}\n")),
            "w.yaml:13: tasks[0].search.space.sweep.x: cannot search over sweep.x");
  EXPECT_EQ(ErrorOf(Search(2, "        steps.x: {int: [1, 2]}\n")),
            "w.yaml:13: tasks[0].search.space.steps.x: cannot search over steps.x: steps is not "
            "a map");
  EXPECT_EQ(ErrorOf("    sweep: {optimizer: [{type: sgd, lr: 0.1}]}\n" +
                    lr("{log_uniform: [1.0e-5, 1.0e-2]}")),
            "w.yaml:14: tasks[0].search.space.optimizer.lr: also swept (sweep: optimizer); a "
            "field is either swept or searched");
  EXPECT_EQ(ErrorOf(Search(2,
                           "        optimizer.lr: {uniform: [0.1, 0.2]}\n"
                           "        optimizer: {choice: [{type: sgd, lr: 0.1}]}\n")),
            "w.yaml:14: tasks[0].search.space.optimizer: also searched as optimizer.lr");
  EXPECT_EQ(ErrorOf(Search(0, "        seed: {int: [1, 4]}\n")),
            "w.yaml:11: tasks[0].search.samples: expected an integer >= 1, got '0'");
  EXPECT_EQ(ErrorOf("    search: {samples: 2, space: {}}\n"),
            "w.yaml:10: tasks[0].search.space: expected a map from field to distribution, e.g. "
            "{optimizer.lr: {log_uniform: [1.0e-5, 1.0e-2]}}");
  EXPECT_THAT(ErrorOf("    search: {samples: 2, seeds: 1, space: {seed: {int: [1, 2]}}}\n"),
              HasSubstr("w.yaml:10: tasks[0].search.seeds: unknown field; expected one of: "
                        "samples, seed, space; did you mean 'seed'?"));
}

// The workload's limit of tasks counts every grid point times the samples.
TEST_F(SearchWorkload, TooManyTasksNameTheSearch) {
  EXPECT_EQ(ErrorOf(Search(20000, "        seed: {int: [1, 4]}\n")),
            "w.yaml:11: tasks[0].search: makes 20000 tasks, which takes the workload past its "
            "limit of 10000 tasks; raise it with max_tasks: in the workload or --max-tasks");
  EXPECT_EQ(ErrorOf("    sweep: {batch_size: [8, 16, 32]}\n" +
                        Search(4, "        optimizer.lr: {uniform: [0.1, 0.2]}\n"),
                    10),
            "w.yaml:12: tasks[0].search: with the sweep, makes 12 tasks, which takes the "
            "workload past its limit of 10 tasks; raise it with max_tasks: in the workload or "
            "--max-tasks");
  EXPECT_EQ(Parse(Search(10, "        seed: {int: [1, 4]}\n"), 10).tasks.size(), 10u);
}

// A field the task does not take is refused as a sampled task reads it,
// with the closest field named, at the line of the searched field.
TEST_F(SearchWorkload, AnUnknownFieldIsRefusedWithASuggestion) {
  std::string error = ErrorOf(Search(2, "        optimizer.lrr: {uniform: [0.1, 0.2]}\n"));
  EXPECT_THAT(error, ::testing::StartsWith("w.yaml:13: tasks[0] (search gpt-lrr0."));
  EXPECT_THAT(error, HasSubstr(").optimizer.lrr: unknown field; expected one of: type, lr, "
                               "weight_decay, schedule, clip_grad_norm; did you mean 'lr'?"));
  // A value the field does not take names the field that drew it.
  error = ErrorOf(Search(2,
                         "        optimizer.lr: {uniform: [0.1, 0.2]}\n"
                         "        batch_size: {int: [0, 0]}\n"));
  EXPECT_TRUE(
      std::regex_match(error, std::regex("w\\.yaml:14: tasks\\[0\\] \\(search gpt-lr0\\.[0-9]+-bs0"
                                         "\\)\\.batch_size: expected an integer >= 1, got '0'")))
      << error;
}

// The example reads as written: 4 sampled tasks, the values those of the
// documented formulas (docs/contracts.md), here as an independent
// implementation of them gave them (Python: the splitmix64 numbers, then
// exp(ln lo + u (ln hi - ln lo)) and lo + u (hi - lo) with its own log and
// exp; names to 4 digits), so a change of the draws shows here.
TEST(SearchExample, ExamplesValidationSearchReadsAsDocumented) {
  Workload w = LoadWorkloadFile(SATURN_SOURCE_DIR "/examples/validation/search.yaml");
  std::vector<std::string> names;
  for (const WorkloadTask& t : w.tasks) {
    names.push_back(t.name);
    const double lr = t.spec["optimizer"]["lr"];
    EXPECT_GE(lr, 1.0e-4);
    EXPECT_LE(lr, 1.0e-2);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "gpt-lr0.0006021-weight_decay0.001679", "gpt-lr0.006332-weight_decay0.05829",
                "gpt-lr0.0008033-weight_decay0.02494", "gpt-lr0.0008628-weight_decay0.03281"}));
}

}  // namespace
}  // namespace saturn
