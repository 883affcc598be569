// The engine's failure kinds beyond bad input (saturn::InputError), each with
// the worker exit status it maps to (docs/worker.md).
//
//   try { Train(); }
//   catch (const OutOfMemoryError& e) { return 3; }   // device capacity exceeded
//   catch (const PeerFailure& e) { return 4; }        // a rank died or timed out
#pragma once

#include <stdexcept>
#include <string>

namespace saturn::engine {

// A device ran out of its declared (CPU) or physical (CUDA) memory.
class OutOfMemoryError : public std::runtime_error {
 public:
  explicit OutOfMemoryError(const std::string& message) : std::runtime_error(message) {}
};

// A collective or rendezvous failed: a peer died, or waited past the timeout.
class PeerFailure : public std::runtime_error {
 public:
  explicit PeerFailure(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace saturn::engine
