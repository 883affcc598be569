// Typed, checked access to YAML fields for the spec readers.
//
// Every reader names the file, the line and the field path in its error,
// e.g. "workload.yaml:7: tasks[0].batch_size: expected an integer >= 1, got 'x'".
//
//   YamlFields f(node, "cluster.yaml", "nodes[0]");
//   f.AllowOnly({"name", "gpus", "gpu_memory_gib"});
//   int gpus = f.Int("gpus", /*min=*/1);
//   std::optional<double> mem = f.OptionalDouble("gpu_memory_gib", /*min_exclusive=*/0);
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/limits.h"

namespace saturn {

inline constexpr long kNoMax = std::numeric_limits<long>::max();

// Parses YAML text; syntax errors become InputError with the line.
YAML::Node ParseYamlText(const std::string& text, std::string_view source);

// 1-based line of a node, 0 if unknown.
int YamlLine(const YAML::Node& node);

class YamlFields {
 public:
  // `node` must be a map; `path` is its field path ("" for the document root).
  YamlFields(const YAML::Node& node, std::string source, std::string path);

  const YAML::Node& node() const { return node_; }
  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }
  // "path.key" (or "key" at the root).
  std::string FieldPath(std::string_view key) const;

  bool Has(std::string_view key) const;
  // Rejects keys outside `allowed` (catches typos such as "gpu" for "gpus").
  void AllowOnly(std::initializer_list<std::string_view> allowed) const;

  std::string String(std::string_view key) const;
  std::optional<std::string> OptionalString(std::string_view key) const;
  // An integer in [min, max].
  long Int(std::string_view key, long min, long max = kNoMax) const;
  std::optional<long> OptionalInt(std::string_view key, long min, long max = kNoMax) const;
  // A finite number > min_exclusive and <= max.
  double Double(std::string_view key, double min_exclusive, double max = limits::kMaxNumber) const;
  std::optional<double> OptionalDouble(std::string_view key, double min_exclusive,
                                       double max = limits::kMaxNumber) const;
  std::optional<bool> OptionalBool(std::string_view key) const;
  // Throws "missing required field" if absent.
  YAML::Node Required(std::string_view key) const;

  [[noreturn]] void Fail(std::string_view key, const std::string& message) const;

 private:
  YAML::Node node_;
  std::string source_;
  std::string path_;
};

// Conversions for scalars found elsewhere (list items and the like).
long YamlToInt(const YAML::Node& node, std::string_view source, const std::string& field, long min,
               long max = kNoMax);
double YamlToDouble(const YAML::Node& node, std::string_view source, const std::string& field,
                    double min_exclusive, double max = limits::kMaxNumber);
std::string YamlToString(const YAML::Node& node, std::string_view source, const std::string& field);
// A map's key as a string; InputError naming `field` (the map) if the key is
// a list or a map.
std::string YamlKey(const YAML::Node& key, std::string_view source, const std::string& field);

}  // namespace saturn
