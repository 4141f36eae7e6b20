// Command-line values shared by the subcommands.
#pragma once

#include <cstdint>
#include <string>

namespace faultline {

// A non-negative integer, optionally with a unit K, M, G (or KiB, MiB, GiB); UsageError naming
// `what` otherwise.
uint64_t parse_number(const std::string& text, const std::string& what);

} // namespace faultline
