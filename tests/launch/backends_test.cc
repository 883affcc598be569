#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "launch/backend.h"

namespace saturn {
namespace {

using ::testing::ElementsAre;

TEST(Backends, EveryBackendIsRegisteredOnceByName) {
  EXPECT_THAT(Backends().Names(), ElementsAre("local", "slurm"));
  EXPECT_EQ(MakeBackend("local")->Name(), "local");
}

TEST(Backends, AnUnknownBackendNamesTheOptionAndTheKnownOnes) {
  try {
    MakeBackend("k8s");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "--backend: unknown launch backend 'k8s'; expected one of: local, slurm");
  }
}

}  // namespace
}  // namespace saturn
