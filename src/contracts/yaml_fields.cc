#include "contracts/yaml_fields.h"

#include <cmath>
#include <cstdlib>

#include "common/error.h"
#include "common/format.h"
#include "common/json_text.h"

namespace saturn {
namespace {

std::string Describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsScalar()) return Quote(node.Scalar());
  if (node.IsSequence()) return "a list";
  return "a map";
}

enum class Parsed { kOk, kNotANumber, kOutOfRange };

Parsed ParseLong(const std::string& text, long* out) {
  if (text.empty()) return Parsed::kNotANumber;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0') return Parsed::kNotANumber;
  if (errno != 0) return Parsed::kOutOfRange;
  *out = v;
  return Parsed::kOk;
}

bool ParseDouble(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  // Out of range: too large reads as +-inf (refused by the callers' bounds),
  // too small as an underflow, refused here.
  if (*end != '\0' || (errno != 0 && !std::isinf(v))) return false;
  *out = v;
  return true;
}

}  // namespace

YAML::Node ParseYamlText(const std::string& text, std::string_view source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(source, e.mark.line + 1, "", "invalid YAML: " + e.msg);
  }
}

int YamlLine(const YAML::Node& node) {
  if (!node.IsDefined()) return 0;
  int line = node.Mark().line;
  return line >= 0 ? line + 1 : 0;
}

YamlFields::YamlFields(const YAML::Node& node, std::string source, std::string path)
    : node_(node), source_(std::move(source)), path_(std::move(path)) {
  if (!node_.IsMap()) {
    throw InputError(source_, YamlLine(node_), path_.empty() ? "document" : path_,
                     "expected a map of fields, got " + Describe(node_));
  }
}

std::string YamlFields::FieldPath(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  return path_ + "." + std::string(key);
}

bool YamlFields::Has(std::string_view key) const {
  YAML::Node v = node_[std::string(key)];
  return v.IsDefined() && !v.IsNull();
}

void YamlFields::AllowOnly(std::initializer_list<std::string_view> allowed) const {
  for (const auto& item : node_) {
    std::string key = YamlKey(item.first, source_, path_.empty() ? "document" : path_);
    bool ok = false;
    for (std::string_view a : allowed)
      ok = ok || key == a;
    if (!ok) {
      std::string list;
      std::vector<std::string> names;
      for (std::string_view a : allowed) {
        list += (list.empty() ? "" : ", ") + std::string(a);
        names.emplace_back(a);
      }
      std::string hint = DidYouMean(key, names);
      throw InputError(
          source_, YamlLine(item.first), FieldPath(key),
          "unknown field; expected one of: " + list + (hint.empty() ? "" : "; " + hint));
    }
  }
}

void YamlFields::Fail(std::string_view key, const std::string& message) const {
  YAML::Node v = node_[std::string(key)];
  int line = v.IsDefined() ? YamlLine(v) : YamlLine(node_);
  throw InputError(source_, line, FieldPath(key), message);
}

YAML::Node YamlFields::Required(std::string_view key) const {
  if (!Has(key)) Fail(key, "missing required field");
  return node_[std::string(key)];
}

std::string YamlFields::String(std::string_view key) const {
  return YamlToString(Required(key), source_, FieldPath(key));
}

std::optional<std::string> YamlFields::OptionalString(std::string_view key) const {
  if (!Has(key)) return std::nullopt;
  return String(key);
}

long YamlFields::Int(std::string_view key, long min, long max) const {
  return YamlToInt(Required(key), source_, FieldPath(key), min, max);
}

std::optional<long> YamlFields::OptionalInt(std::string_view key, long min, long max) const {
  if (!Has(key)) return std::nullopt;
  return Int(key, min, max);
}

double YamlFields::Double(std::string_view key, double min_exclusive, double max) const {
  return YamlToDouble(Required(key), source_, FieldPath(key), min_exclusive, max);
}

std::optional<double> YamlFields::OptionalDouble(std::string_view key, double min_exclusive,
                                                 double max) const {
  if (!Has(key)) return std::nullopt;
  return Double(key, min_exclusive, max);
}

std::optional<bool> YamlFields::OptionalBool(std::string_view key) const {
  if (!Has(key)) return std::nullopt;
  YAML::Node v = node_[std::string(key)];
  if (v.IsScalar()) {
    const std::string& s = v.Scalar();
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
  }
  Fail(key, "expected true or false, got " + Describe(v));
}

long YamlToInt(const YAML::Node& node, std::string_view source, const std::string& field, long min,
               long max) {
  long v = 0;
  Parsed parsed = node.IsScalar() ? ParseLong(node.Scalar(), &v) : Parsed::kNotANumber;
  if (parsed == Parsed::kOutOfRange || (parsed == Parsed::kOk && v > max && v >= min)) {
    throw InputError(source, YamlLine(node), field,
                     "expected an integer <= " + std::to_string(max) + ", got " + Describe(node));
  }
  if (parsed != Parsed::kOk || v < min) {
    throw InputError(source, YamlLine(node), field,
                     "expected an integer >= " + std::to_string(min) + ", got " + Describe(node));
  }
  return v;
}

double YamlToDouble(const YAML::Node& node, std::string_view source, const std::string& field,
                    double min_exclusive, double max) {
  double v = 0;
  bool parsed = node.IsScalar() && ParseDouble(node.Scalar(), &v);
  if (parsed && v > max) {
    throw InputError(source, YamlLine(node), field,
                     "expected a number <= " + FormatNumber(max) + ", got " + Describe(node));
  }
  if (!parsed || !std::isfinite(v) || !(v > min_exclusive)) {
    std::string bound = min_exclusive == 0 ? "> 0" : "> " + std::to_string(min_exclusive);
    if (std::isinf(min_exclusive)) bound = "that is finite";
    throw InputError(source, YamlLine(node), field,
                     "expected a number " + bound + ", got " + Describe(node));
  }
  return v;
}

std::string YamlKey(const YAML::Node& key, std::string_view source, const std::string& field) {
  if (!key.IsScalar()) {
    throw InputError(source, YamlLine(key), field,
                     "expected names as keys, got " + Describe(key) + " as a key");
  }
  if (std::string why = UnlessUtf8(key.Scalar()); !why.empty()) {
    throw InputError(source, YamlLine(key), field, "a key: " + why);
  }
  return key.Scalar();
}

std::string YamlToString(const YAML::Node& node, std::string_view source,
                         const std::string& field) {
  if (!node.IsScalar() || node.Scalar().empty()) {
    throw InputError(source, YamlLine(node), field,
                     "expected a non-empty string, got " + Describe(node));
  }
  if (std::string why = UnlessUtf8(node.Scalar()); !why.empty()) {
    throw InputError(source, YamlLine(node), field, why);
  }
  return node.Scalar();
}

}  // namespace saturn
