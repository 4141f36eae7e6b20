#include "sim/cli/options.h"

#include "sim/core/error.h"

#include <cctype>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <unistd.h>

namespace faultline::cli {
namespace {

std::string& recorded_command_line() {
  static std::string line = "faultline";
  return line;
}

// A fraction or percentage: the whole text must be a number (and "%" for a percentage).
bool parse_fraction(const std::string& text, double& out) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  size_t used = 0;
  try {
    out = std::stod(number, &used);
  } catch (const std::exception&) {
    return false;
  }
  if (used != number.size()) return false;
  if (percent) out /= 100.0;
  return true;
}

} // namespace

uint64_t parse_number(const std::string& text, const std::string& what) {
  size_t used = 0;
  uint64_t v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || !std::isdigit(static_cast<unsigned char>(text[0])))
    throw UsageError(what + ": expected a number, got \"" + text + "\"");
  const std::string unit = text.substr(used);
  const std::map<std::string, uint64_t> units = {{"", 1},
                                                 {"K", 1ull << 10},
                                                 {"KiB", 1ull << 10},
                                                 {"M", 1ull << 20},
                                                 {"MiB", 1ull << 20},
                                                 {"G", 1ull << 30},
                                                 {"GiB", 1ull << 30}};
  auto it = units.find(unit);
  if (it == units.end()) throw UsageError(what + ": unknown unit \"" + unit + "\" (use K, M or G)");
  if (v > std::numeric_limits<uint64_t>::max() / it->second)
    throw UsageError(what + ": " + text + " is too large");
  return v * it->second;
}

uint64_t parse_iterations(const std::string& text) {
  const uint64_t n = parse_number(text, "--iterations");
  if (n == 0) throw UsageError("--iterations 0: expected 1 or more training steps");
  if (n > 1'000'000) // the run config's bound: one that catches a typo, not a model limit
    throw UsageError("--iterations " + text + ": expected at most 1000000 training steps");
  return n;
}

Budget parse_budget(const std::string& text, const std::string& what) {
  Budget b;
  // A unit makes it bytes, so that "1.5G" says the unit is wrong rather than the fraction.
  if (text.find_first_of("KMG") != std::string::npos) {
    b.bytes = parse_number(text, what);
    return b;
  }
  if (!parse_fraction(text, b.fraction) || !(b.fraction > 0 && b.fraction <= 1))
    throw UsageError(what + " " + text + ": expected a fraction in (0, 1], a percentage or bytes");
  return b;
}

namespace {

// An option whose value is a number with K/M/G (parse_number) stored into `target`.
template <class T>
CLI::Option* add_number(CLI::App& app, const std::string& name, T& target, const std::string& help,
                        const char* type) {
  return app
      .add_option_function<std::string>(
          name, [&target, name](const std::string& text) { target = parse_number(text, name); },
          help)
      ->type_name(type);
}

} // namespace

CLI::Option* add_bytes(CLI::App& app, const std::string& name, uint64_t& target,
                       const std::string& help) {
  return add_number(app, name, target, help, "BYTES");
}

CLI::Option* add_bytes(CLI::App& app, const std::string& name, std::optional<uint64_t>& target,
                       const std::string& help) {
  return add_number(app, name, target, help, "BYTES");
}

CLI::Option* add_count(CLI::App& app, const std::string& name, std::optional<uint64_t>& target,
                       const std::string& help) {
  return add_number(app, name, target, help, "N");
}

CLI::Option* add_budget(CLI::App& app, std::optional<Budget>& target, const std::string& help) {
  return app
      .add_option_function<std::string>(
          "--budget",
          [&target](const std::string& text) { target = parse_budget(text, "--budget"); }, help)
      ->type_name("B");
}

CLI::Option* add_device(CLI::App& app, int& target) {
  return app
      .add_option_function<std::string>(
          "--device",
          [&target](const std::string& text) {
            const uint64_t n = parse_number(text, "--device");
            if (n > 1023) throw UsageError("--device " + text + ": expected a GPU index");
            target = static_cast<int>(n);
          },
          "the CUDA index of the GPU to use (default 0)")
      ->type_name("N");
}

CLI::Option* add_iterations(CLI::App& app, uint64_t& target, const std::string& help) {
  return app
      .add_option_function<std::string>(
          "--iterations", [&target](const std::string& text) { target = parse_iterations(text); },
          help)
      ->type_name("N");
}

CLI::Option* add_output(CLI::App& app, std::string& target, const std::string& help,
                        const std::string& name) {
  return app.add_option(name, target, help)->type_name("FILE");
}

bool Progress::wanted() const {
  return !off && (on || isatty(STDERR_FILENO) != 0);
}

void add_progress(CLI::App& app, Progress& target) {
  app.add_flag("--progress", target.on,
               "a progress line on stderr (default: when it is a terminal)");
  app.add_flag("--no-progress", target.off, "no progress line");
}

void set_command_line(int argc, const char* const* argv) {
  std::string& line = recorded_command_line();
  line = "faultline";
  for (int i = 1; i < argc; ++i) line += std::string(" ") + argv[i];
}

std::string command_line() {
  return recorded_command_line();
}

void write_result(const nlohmann::json& doc, const std::string& path) {
  const std::string text = doc.dump(2) + "\n";
  if (path.empty()) {
    std::cout << text;
    return;
  }
  std::ofstream out(path);
  if (!out || !(out << text)) throw Error(path + ": cannot write results");
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

} // namespace faultline::cli
