// Command-line values shared by the subcommands.
#pragma once

#include <cstdint>
#include <string>

namespace faultline {

// A non-negative integer (digits only, no sign, no fraction), optionally with a unit K, M, G (or
// KiB, MiB, GiB); UsageError naming `what` otherwise, also when it does not fit 64 bits.
uint64_t parse_number(const std::string& text, const std::string& what);

// The value of --iterations: 0 when not given (""), else a step count of at least 1.
uint64_t parse_iterations(const std::string& text);

} // namespace faultline
