// Human-readable numbers for progress lines, summaries and charts.
//
//   FormatDuration(3725)  -> "1h02m"
//   FormatDuration(42.5)  -> "42.5s"
//   FormatFixed(1.23456, 2) -> "1.23"
//   FormatMilliseconds(30115.800000000003) -> "30115.8"
//   FormatLoss(1.50883) -> "1.5088";  FormatLoss(0.000023) -> "2.3e-05"
//   Plural(1, "task") -> "1 task";  Plural(3, "task") -> "3 tasks";  Plural(2, "switch") -> "2
//   switches"
//   DidYouMean("MLP", {"gpt", "mlp"}) -> "did you mean 'mlp'?"
//   JoinWithAnd({"single", "ddp", "fsdp"}) -> "single, ddp and fsdp"
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace saturn {

// A duration, or a time on a run's clock, as Saturn shows every one to
// users, in the terminal and on the dashboard (its formatDuration rounds the
// same way): "42.5s", "2m05s", "1h02m", "4.0d", and "0.04s" from 5 ms to a
// tenth of a second (JSON keeps seconds).
std::string FormatDuration(double seconds);
std::string FormatFixed(double value, int decimals);
// A loss or other small positive figure: 4 decimals, or 3 significant
// digits when that would show 0.0000 (FormatLoss(2.3e-5) -> "2.3e-05").
std::string FormatLoss(double value);
// Seconds to the millisecond, without trailing zeros: 30115.8, 12, 0.001.
std::string FormatMilliseconds(double seconds);
// Shortest round-trip text for a double (used in CSV/JSON-adjacent output).
std::string FormatNumber(double value);
// "<n> <word>", with an "s" (after s, x, ch, sh: "es") unless n is 1.
std::string Plural(long n, const std::string& word);
// A list in words: "a", "a and b", "a, b and c"; "" for none.
std::string JoinWithAnd(const std::vector<std::string>& items);

// The closest of `known` to a name that is not one of them, for "unknown X"
// messages: the same name but for case or '-' / '_', else one within an
// edit distance of a third of its length (a typo, a missing or transposed
// letter), else one it begins (at least 3 letters); the first such in
// `known`'s order. "" when none is close.
std::string ClosestName(std::string_view name, const std::vector<std::string>& known);
// "did you mean 'x'?" for ClosestName's answer, or "" when there is none.
std::string DidYouMean(std::string_view name, const std::vector<std::string>& known);

}  // namespace saturn
