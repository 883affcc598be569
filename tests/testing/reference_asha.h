// An ASHA written in the tests from its definition, independent of
// src/tune: the reference the executor's and the simulator's stops are
// checked against (fed the evaluations in the order they were logged).
//
//   test::ReferenceAsha asha(/*grace=*/2, /*rf=*/2, /*steps=*/16);
//   if (asha.Stops("t1", 2, 0.7)) ...
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace saturn::test {

// ASHA as Ray Tune's _Bracket (one bracket), written from its definition:
// rungs at grace * rf^k below the task's steps; at the first evaluation at or
// past a rung the task has no record at (the highest such rung), it stops if
// its reward (-loss) is below the (1 - 1/rf) percentile (linear
// interpolation) of the rewards recorded there before it; then it is
// recorded.
class ReferenceAsha {
 public:
  ReferenceAsha(long grace, long rf, long steps) : rf_(rf) {
    for (long r = grace; r < steps; r *= rf)
      rungs_.push_back(r);
  }
  bool Stops(const std::string& task, long step, double loss) {
    for (size_t k = rungs_.size(); k-- > 0;) {
      std::map<std::string, double>& rec = recorded_[k];
      if (step < rungs_[k] || rec.count(task)) continue;
      bool stop = false;
      if (!rec.empty()) {
        std::vector<double> v;
        for (const auto& [name, reward] : rec)
          v.push_back(reward);
        std::sort(v.begin(), v.end());
        double pos = (1.0 - 1.0 / static_cast<double>(rf_)) * static_cast<double>(v.size() - 1);
        size_t lo = static_cast<size_t>(std::floor(pos));
        size_t hi = std::min(lo + 1, v.size() - 1);
        double cutoff = v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
        stop = -loss < cutoff;
      }
      rec[task] = -loss;
      return stop;
    }
    return false;
  }

 private:
  long rf_;
  std::vector<long> rungs_;
  std::map<size_t, std::map<std::string, double>> recorded_;
};

}  // namespace saturn::test
