#include "common/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/error.h"

namespace saturn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Thing {
  explicit Thing(std::string n) : name(std::move(n)) {}
  std::string_view Name() const { return name; }
  std::string name;
};

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Registry, FindsByNameInRegistrationOrder) {
  Registry<Thing> reg("thing", "--thing");
  reg.Register(std::make_unique<Thing>("b"));
  reg.Register(std::make_unique<Thing>("a"));
  EXPECT_THAT(reg.Names(), ElementsAre("b", "a"));
  ASSERT_NE(reg.Find("a"), nullptr);
  EXPECT_EQ(reg.Find("a")->name, "a");
  EXPECT_EQ(reg.Find("c"), nullptr);
  EXPECT_EQ(&reg.Get("b"), reg.Find("b"));
  EXPECT_EQ(reg.size(), 2u);
}

TEST(Registry, UnknownNameNamesTheFieldAndTheKnownOnes) {
  Registry<Thing> reg("thing", "--thing");
  reg.Register(std::make_unique<Thing>("x"));
  reg.Register(std::make_unique<Thing>("y"));
  EXPECT_EQ(ErrorOf([&] { reg.Get("z"); }), "--thing: unknown thing 'z'; expected one of: x, y");
}

TEST(Registry, AnUnknownNameCloseToAKnownOneSuggestsIt) {
  Registry<Thing> reg("solver", "--solver");
  for (const char* name : {"auto", "current-practice", "max", "min"})
    reg.Register(std::make_unique<Thing>(name));
  EXPECT_EQ(ErrorOf([&] { reg.Get("MAX"); }),
            "--solver: unknown solver 'MAX'; expected one of: auto, current-practice, max, min; "
            "did you mean 'max'?");
  EXPECT_EQ(reg.UnknownMessage("curent-practice"),
            "unknown solver 'curent-practice'; expected one of: auto, current-practice, max, min; "
            "did you mean 'current-practice'?");
  EXPECT_EQ(reg.UnknownMessage("gurobi"),
            "unknown solver 'gurobi'; expected one of: auto, current-practice, max, min");
}

TEST(Registry, OneRuleForNames) {
  Registry<Thing> reg("thing", "--thing");
  reg.Register(std::make_unique<Thing>("x"));
  EXPECT_THAT(ErrorOf([&] { reg.Register(std::make_unique<Thing>("x")); }),
              HasSubstr("thing 'x' is already registered"));
  EXPECT_THAT(ErrorOf([&] { reg.Register(std::make_unique<Thing>("")); }),
              HasSubstr("must be non-empty, without spaces or commas"));
  EXPECT_THAT(ErrorOf([&] { reg.Register(std::make_unique<Thing>("a,b")); }),
              HasSubstr("must be non-empty, without spaces or commas"));
  EXPECT_THAT(ErrorOf([&] { reg.Register(nullptr); }), HasSubstr("a null thing"));
  EXPECT_EQ(reg.size(), 1u);
}

}  // namespace
}  // namespace saturn
