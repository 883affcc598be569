// The harness's sections, one function each. Every section prints its tables
// as it goes, appends them to the markdown summary, writes its charts into
// the output folder and adds a line per target it measures.
#pragma once

#include <string>
#include <vector>

#include "bench/paper/lab.h"

namespace saturn::bench {

struct Target {
  std::string what;
  bool met = false;
  std::string measured;
};

struct Report {
  std::string markdown;
  std::vector<Target> targets;
  std::vector<std::string> charts;  // files written, relative to the output folder
  // Writes an SVG into the output folder and lists it.
  void Chart(const Config& config, const std::string& file, const std::string& svg);
};

void Fig5Section(Lab& lab, Report& report);
void NoiseSection(Lab& lab, Report& report);
void LadderSection(Lab& lab, Report& report);
void SensitivitySection(Lab& lab, Report& report);
void OnlineSection(Lab& lab, Report& report);
void TypesSection(Lab& lab, Report& report);
void LoraSection(Lab& lab, Report& report);  // lora_grid.cc

}  // namespace saturn::bench
