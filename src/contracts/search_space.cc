#include "contracts/search_space.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>

#include "common/error.h"
#include "common/format.h"
#include "contracts/workload_model.h"

namespace saturn {
namespace {

// ln 2 split for exact products k * kLn2Hi (|k| < 2^20): the high part has
// its last 21 bits zero (Cody and Waite's reduction).
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kSqrtHalf = 0.70710678118654752440;
// Integer bounds: exact as doubles (and in JSON readers that use them).
constexpr long kMaxSearchInt = 1L << 53;

const std::vector<std::string> kKinds = {"log_uniform", "uniform", "int", "choice"};

// floor(x n / 2^64): an index below n from all 64 bits of x.
std::uint64_t Below(std::uint64_t x, std::uint64_t n) {
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64);
}

// A number as a name shows it: 4 significant digits, the exponent without
// '+' or leading zeros ("3.162e-5", "0.05", "1.5e7").
std::string ShortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  std::string s = buf;
  const size_t e = s.find('e');
  if (e == std::string::npos) return s;
  std::string digits = s.substr(e + 2);
  while (digits.size() > 1 && digits[0] == '0')
    digits.erase(0, 1);
  return s.substr(0, e) + "e" + (s[e + 1] == '-' ? "-" : "") + digits;
}

// `a` and `b` are one field, or one is inside the other.
bool Overlap(const std::string& a, const std::string& b) {
  auto inside = [](const std::string& x, const std::string& y) {
    return x.size() > y.size() && x.compare(0, y.size(), y) == 0 && x[y.size()] == '.';
  };
  return a == b || inside(a, b) || inside(b, a);
}

// An int field's bound: an integer within +-2^53.
long IntBound(const YAML::Node& v, std::string_view source, const std::string& field) {
  if (v.IsScalar()) {
    char* end = nullptr;
    errno = 0;
    std::strtol(v.Scalar().c_str(), &end, 10);
    if (v.Scalar().empty() || *end != '\0') {
      throw InputError(source, YamlLine(v), field, "expected an integer, got " + Quote(v.Scalar()));
    }
  }
  return YamlToInt(v, source, field, -kMaxSearchInt, kMaxSearchInt);
}

// [lo, hi] of a log_uniform, uniform or int field.
void ReadBounds(const YAML::Node& v, std::string_view source, const std::string& at,
                SearchField& f) {
  if (!v.IsSequence() || v.size() != 2) {
    throw InputError(source, YamlLine(v), at, "expected [lo, hi]");
  }
  if (f.kind == SearchKind::kInt) {
    f.int_lo = IntBound(v[0], source, at + "[0]");
    f.int_hi = IntBound(v[1], source, at + "[1]");
    f.lo = static_cast<double>(f.int_lo);
    f.hi = static_cast<double>(f.int_hi);
  } else {
    const double any = -std::numeric_limits<double>::infinity();
    f.lo = YamlToDouble(v[0], source, at + "[0]", any);
    f.hi = YamlToDouble(v[1], source, at + "[1]", any);
  }
  if (f.lo > f.hi) {
    throw InputError(source, YamlLine(v), at,
                     "expected lo <= hi, got [" + v[0].Scalar() + ", " + v[1].Scalar() + "]");
  }
  if (f.kind == SearchKind::kLogUniform && f.lo <= 0) {
    throw InputError(
        source, YamlLine(v), at,
        "expected 0 < lo (a log-uniform draws the logarithm), got lo " + v[0].Scalar());
  }
}

// One field of `space:`: {DISTRIBUTION: ARGUMENTS}.
SearchField ReadField(const YAML::Node& node, const std::string& path, const std::string& field,
                      std::string_view source) {
  SearchField f;
  f.path = path;
  f.line = YamlLine(node);
  if (!node.IsMap() || node.size() != 1) {
    throw InputError(source, f.line, field,
                     "expected one distribution: {log_uniform: [lo, hi]}, {uniform: [lo, hi]}, "
                     "{int: [lo, hi]} or {choice: [values]}");
  }
  const auto kv = *node.begin();
  const std::string kind = YamlKey(kv.first, source, field);
  const std::string at = field + "." + kind;
  if (kind == "choice") {
    if (!kv.second.IsSequence() || kv.second.size() == 0) {
      throw InputError(source, YamlLine(kv.second), at, "expected a non-empty list of values");
    }
    f.kind = SearchKind::kChoice;
    f.choices = kv.second;
    return f;
  }
  if (kind == "log_uniform") {
    f.kind = SearchKind::kLogUniform;
  } else if (kind == "uniform") {
    f.kind = SearchKind::kUniform;
  } else if (kind == "int") {
    f.kind = SearchKind::kInt;
  } else {
    throw InputError(source, YamlLine(kv.first), field,
                     "unknown distribution " + Quote(kind) +
                         "; expected log_uniform, uniform, int or choice" +
                         SuggestionFor(kind, kKinds));
  }
  ReadBounds(kv.second, source, at, f);
  return f;
}

}  // namespace

SearchSpace ReadSearchSpace(const YamlFields& task, const std::vector<SweepAxis>& sweep_axes) {
  SearchSpace space;
  if (!task.Has("search")) return space;
  const YAML::Node node = task.Required("search");
  if (!node.IsMap()) {
    task.Fail("search", "expected a map: {samples: N, seed: S, space: {FIELD: DISTRIBUTION}}");
  }
  YamlFields s(node, task.source(), task.FieldPath("search"));
  s.AllowOnly({"samples", "seed", "space"});
  space.samples = s.Int("samples", 1);
  space.seed = static_cast<std::uint64_t>(s.OptionalInt("seed", 0).value_or(0));
  space.line = YamlLine(node);
  const YAML::Node fields = s.Required("space");
  if (!fields.IsMap() || fields.size() == 0) {
    s.Fail("space",
           "expected a map from field to distribution, e.g. {optimizer.lr: {log_uniform: "
           "[1.0e-5, 1.0e-2]}}");
  }
  for (const auto& kv : fields) {
    const std::string key = YamlKey(kv.first, task.source(), s.FieldPath("space"));
    const std::string field = s.FieldPath("space") + "." + key;
    const int line = YamlLine(kv.first);
    CheckVariedField(task, key, line, field, "search");
    for (const SweepAxis& axis : sweep_axes) {
      if (Overlap(key, axis.path)) {
        throw InputError(
            task.source(), line, field,
            "also swept (sweep: " + axis.path + "); a field is either swept or searched");
      }
    }
    for (const SearchField& other : space.fields) {
      if (Overlap(key, other.path)) {
        throw InputError(task.source(), line, field, "also searched as " + other.path);
      }
    }
    space.fields.push_back(ReadField(kv.second, key, field, task.source()));
  }
  return space;
}

std::uint64_t SearchRandom::Next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double SearchLog(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // x = m 2^e, m in [1/2, 1): exact
  if (m < kSqrtHalf) {
    m *= 2;
    --e;
  }
  // ln m = 2 atanh s = 2 (s + s^3/3 + s^5/5 + ...), |s| < 0.172: the
  // terms past the 14th are below 2^-90 of the first.
  const double s = (m - 1) / (m + 1);
  const double s2 = s * s;
  double sum = 0;
  for (int k = 13; k >= 0; --k)
    sum = sum * s2 + 1.0 / (2 * k + 1);
  return 2 * s * sum + e * kLn2;
}

double SearchExp(double y) {
  // e^y = 2^k e^r, r = y - k ln 2 in about [-0.35, 0.35].
  const double k = std::round(y / kLn2);
  const double r = (y - k * kLn2Hi) - k * kLn2Lo;
  // e^r = 1 + r (1 + r/2 (1 + r/3 (...))): 22 terms.
  double sum = 1;
  for (int n = 22; n >= 1; --n)
    sum = 1 + r * sum / n;
  return std::ldexp(sum, static_cast<int>(k));
}

namespace {

// A log_uniform or uniform field's number for `x`.
double SampleNumber(const SearchField& field, std::uint64_t x) {
  const double u = static_cast<double>(x >> 11) * 0x1.0p-53;  // [0, 1)
  double v = field.lo + u * (field.hi - field.lo);
  if (field.kind == SearchKind::kLogUniform) {
    const double a = SearchLog(field.lo);
    v = SearchExp(a + u * (SearchLog(field.hi) - a));
  }
  return std::fmin(std::fmax(v, field.lo), field.hi);
}

long SampleInt(const SearchField& field, std::uint64_t x) {
  const auto n = static_cast<std::uint64_t>(field.int_hi - field.int_lo) + 1;
  return field.int_lo + static_cast<long>(Below(x, n));
}

}  // namespace

YAML::Node SampleValue(const SearchField& field, std::uint64_t x) {
  switch (field.kind) {
    case SearchKind::kChoice:
      return field.choices[Below(x, field.choices.size())];
    case SearchKind::kInt:
      return YAML::Node(std::to_string(SampleInt(field, x)));
    default:
      return YAML::Node(FormatNumber(SampleNumber(field, x)));
  }
}

std::vector<SearchSample> DrawSamples(const SearchSpace& space) {
  SearchRandom random(space.seed);
  std::vector<SearchSample> samples(static_cast<size_t>(space.samples));
  std::map<std::string, int> uses;
  for (SearchSample& sample : samples) {
    for (const SearchField& field : space.fields) {
      const std::uint64_t x = random.Next();
      YAML::Node v = SampleValue(field, x);
      const bool number =
          field.kind == SearchKind::kUniform || field.kind == SearchKind::kLogUniform;
      sample.suffix += "-" + SweepShortKey(field.path) +
                       (number ? ShortNumber(SampleNumber(field, x)) : SweepNameValue(v));
      sample.values.push_back(v);
    }
    ++uses[sample.suffix];
  }
  for (size_t i = 0; i < samples.size(); ++i) {
    if (uses[samples[i].suffix] > 1) samples[i].suffix += "-s" + std::to_string(i);
  }
  return samples;
}

}  // namespace saturn
