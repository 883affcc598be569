// The TorchScript models and data files of the engine tests
// (tests/engine/fixtures/make_torchscript_fixtures.py lists them).
//
// Made at test time by the script when /usr/bin/python3 has torch (once per
// build tree, in <build>/tests/engine/ts_fixtures); otherwise the copies committed in
// tests/engine/fixtures are used. SATURN_TS_FIXTURES=committed forces the
// committed copies.
//
//   std::string model = TorchScriptFixture("seq_mlp.pt");
#pragma once

#include <string>

namespace saturn::testing {

// The path of a fixture file.
std::string TorchScriptFixture(const std::string& name);
// "generated" or "committed", for test logs.
std::string TorchScriptFixtureSource();

}  // namespace saturn::testing
