// Named things by name: the one registry behind solvers, techniques, model
// families and launch backends. Each kind registers its built-ins in one place
// (one line per entry); a plug-in registers more at run time.
//
//   Registry<Solver> reg("solver", "--solver");
//   reg.Register(std::make_unique<MaxSolver>());
//   const Solver* s = reg.Find("max");   // nullptr if unknown
//   reg.Get("gurobi");                    // InputError: "--solver: unknown solver 'gurobi';
//                                         //  expected one of: max"
//   reg.Get("MAX");                       // "...; expected one of: max; did you mean 'max'?"
//
// One rule for names, whatever the kind: non-empty, no spaces or commas
// (names are listed comma-separated and written in workload files), and each
// name once; breaking it is an InputError (a plug-in is user input). Entries
// keep their registration order. A registry is neither copied nor moved:
// entries may hold a reference to the registry they are in.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/format.h"

namespace saturn {

template <typename T>
class Registry {
 public:
  // `kind` names an entry in messages ("solver"); `field` is where an unknown
  // name comes from ("--solver", "model.type").
  Registry(std::string kind, std::string field)
      : kind_(std::move(kind)), field_(std::move(field)) {}
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  void Register(std::unique_ptr<T> entry) {
    if (entry == nullptr) throw InputError("", 0, "", "a null " + kind_ + " was registered");
    std::string name(entry->Name());
    if (name.empty() || name.find_first_of(" \t\n,") != std::string::npos) {
      throw InputError(
          "", 0, "",
          kind_ + " name " + Quote(name) + " must be non-empty, without spaces or commas");
    }
    if (Find(name) != nullptr) {
      throw InputError("", 0, "", kind_ + " " + Quote(name) + " is already registered");
    }
    entries_.push_back(std::move(entry));
  }

  const T* Find(std::string_view name) const {
    for (const auto& entry : entries_) {
      if (entry->Name() == name) return entry.get();
    }
    return nullptr;
  }

  // Like Find; an unknown name is an InputError naming the field and the
  // known names.
  const T& Get(std::string_view name) const {
    if (const T* entry = Find(name)) return *entry;
    throw InputError("", 0, field_, UnknownMessage(name));
  }

  // "unknown solver 'x'; expected one of: a, b", and "; did you mean 'a'?"
  // when one is close (common/format.h, ClosestName), for callers that know
  // the file and line the name came from.
  std::string UnknownMessage(std::string_view name) const {
    std::string known;
    for (const std::string& n : Names())
      known += (known.empty() ? "" : ", ") + n;
    std::string hint = DidYouMean(name, Names());
    return "unknown " + kind_ + " " + Quote(name) + "; expected one of: " + known +
           (hint.empty() ? "" : "; " + hint);
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& entry : entries_)
      names.emplace_back(entry->Name());
    return names;
  }

  size_t size() const { return entries_.size(); }

 private:
  std::string kind_;
  std::string field_;
  std::vector<std::unique_ptr<T>> entries_;
};

}  // namespace saturn
