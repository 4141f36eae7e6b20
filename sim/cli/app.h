// The faultline command line as one CLI11 app: how its help looks and how its errors read.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

namespace faultline::cli {

// The top-level app, with the help formatter and option defaults every subcommand inherits (a
// repeated option takes its last value, as the hand-written parsers did). Add subcommands
// (commands.h) before run_app.
std::unique_ptr<CLI::App> make_app();

// Adds a subcommand to `parent` with a one-line summary (listed in the parent's help) and the
// long explanation that ends its own help.
CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& summary,
                      const std::string& explanation);

// Parses argv and runs the chosen subcommand's callback. Returns the exit status: 0 on success
// and for --help (the help of the command it follows, on stdout); 2 for a usage error, reported
// on stderr as "faultline: MESSAGE", the command's usage line and where its help is; 1 for any
// other error ("faultline: error: MESSAGE"). Without a subcommand, prints the help on stderr
// and returns 2.
int run_app(CLI::App& app, int argc, char** argv);

} // namespace faultline::cli
