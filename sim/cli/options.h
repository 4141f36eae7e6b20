// What every subcommand of the faultline command line shares: the option types (byte counts with
// K/M/G, a budget as a fraction, percentage or bytes, a GPU index, a step count, an output path),
// the record of the command line a result was made by, and the writing of a result document.
//
// The option helpers bind a CLI11 option to a variable. Their values are checked when the
// command line has been read, before the subcommand runs; a bad value is a UsageError whose
// message names the option, the value given and what was expected (tests/cli_errors.sh).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace faultline::cli {

// A non-negative integer (digits only, no sign, no fraction), optionally with a unit K, M, G (or
// KiB, MiB, GiB; powers of 1024); UsageError naming `what` otherwise, also when it does not fit
// 64 bits.
uint64_t parse_number(const std::string& text, const std::string& what);

// The value of --iterations: a training step count of at least 1 and at most 1000000.
uint64_t parse_iterations(const std::string& text);

// A residency budget: a fraction of the footprint in (0, 1] ("0.5"), a percentage ("50%") or
// bytes ("8G": a number with a unit K, M or G). Exactly one of the two is set.
struct Budget {
  double fraction = 0;
  uint64_t bytes = 0;
};
Budget parse_budget(const std::string& text, const std::string& what);

// --name BYTES into `target`, left as it is when the option is not given.
CLI::Option* add_bytes(CLI::App& app, const std::string& name, uint64_t& target,
                       const std::string& help);
CLI::Option* add_bytes(CLI::App& app, const std::string& name, std::optional<uint64_t>& target,
                       const std::string& help);
// --name N: a count, as parse_number (K, M, G allowed).
CLI::Option* add_count(CLI::App& app, const std::string& name, std::optional<uint64_t>& target,
                       const std::string& help);
// --budget B: see Budget.
CLI::Option* add_budget(CLI::App& app, std::optional<Budget>& target, const std::string& help);
// --device N: the CUDA index of the GPU to use (default 0).
CLI::Option* add_device(CLI::App& app, int& target);
// --iterations N: training steps to run; 0 (not given) means the trace's own or the config's.
CLI::Option* add_iterations(CLI::App& app, uint64_t& target, const std::string& help);
// --out FILE (or another name): where a result goes; empty means stdout where the subcommand
// allows it.
CLI::Option* add_output(CLI::App& app, std::string& target, const std::string& help,
                        const std::string& name = "--out");

// --progress | --no-progress: a progress line on stderr; by default when stderr is a terminal.
// --no-progress wins when both are given.
struct Progress {
  bool on = false, off = false;
  bool wanted() const;
};
void add_progress(CLI::App& app, Progress& target);

// "faultline ARGS...": how a result was made, recorded in it. Set once by main.
void set_command_line(int argc, const char* const* argv);
std::string command_line();

// Writes `doc` as indented JSON and a newline to `path`, or to stdout when `path` is empty.
// Error "PATH: cannot write results" when the file cannot be written.
void write_result(const nlohmann::json& doc, const std::string& path);

// "a,b,c" as {"a", "b", "c"}; "" as {}.
std::vector<std::string> split_list(const std::string& text);

} // namespace faultline::cli
