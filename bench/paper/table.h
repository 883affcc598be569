// A table of strings printed two ways: aligned columns on the terminal and
// GitHub markdown in summary.md, so both show the same figures.
//
//   Table t({"instance", "makespan_s"});
//   t.Add({"txt-8", "81946"});
//   std::printf("%s", t.Text().c_str());
//   md += t.Markdown();
#pragma once

#include <string>
#include <vector>

namespace saturn::bench {

class Table {
 public:
  explicit Table(std::vector<std::string> header);
  void Add(std::vector<std::string> row);
  std::string Text() const;
  std::string Markdown() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// printf-style formatting into a std::string.
std::string Fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace saturn::bench
