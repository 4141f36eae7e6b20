// Typed errors, thrown where a problem is found and caught once in main.
// Every message says where (file, byte offset, record, JSON path) and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace faultline {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A trace file that cannot be read: corrupt, truncated, wrong version.
class TraceError : public Error {
public:
  using Error::Error;
};

// A config value that is missing, unknown, of the wrong type or out of range.
class ConfigError : public Error {
public:
  using Error::Error;
};

// The simulation itself stopped: no progress, inconsistent state.
class SimulationError : public Error {
public:
  using Error::Error;
};

// Command-line misuse.
class UsageError : public Error {
public:
  using Error::Error;
};

} // namespace faultline
