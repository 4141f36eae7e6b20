#include "sim/cli/app.h"

#include "sim/cli/options.h"
#include "sim/core/error.h"

#include <iostream>
#include <memory>
#include <regex>

namespace faultline::cli {
namespace {

// "faultline alloc run": the app's name after its parents'.
std::string path_of(const CLI::App* app) {
  std::string path = app->get_name();
  for (const CLI::App* p = app->get_parent(); p; p = p->get_parent())
    path = p->get_name() + " " + path;
  return path;
}

// The path without "faultline ": how messages name a subcommand ("" for the top level).
std::string command_of(const CLI::App* app) {
  const std::string path = path_of(app);
  const size_t space = path.find(' ');
  return space == std::string::npos ? "" : path.substr(space + 1);
}

// The subcommands an app has (not its option groups, which CLI11 keeps as unnamed subcommands).
std::vector<const CLI::App*> subcommands_of(const CLI::App* app) {
  return app->get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); });
}

// Help as the hand-written usage strings had it: the usage line names the required options and
// the subcommands, so that an error can show it alone.
class Formatter : public CLI::Formatter {
public:
  std::string make_usage(const CLI::App* app, std::string) const override {
    std::string line = "usage: " + path_of(app);
    const auto subs = subcommands_of(app);
    if (subs.size() > 4) { // the top level: its help lists them
      line += " <command>";
    } else if (!subs.empty()) {
      std::string names;
      for (const CLI::App* sub : subs) names += (names.empty() ? "" : "|") + sub->get_name();
      line += " " + (app->get_require_subcommand_min() > 0 ? names : "[" + names + "]");
    }
    bool optional = false;
    for (const CLI::Option* opt : app->get_options()) {
      if (!opt->nonpositional() || opt == app->get_help_ptr()) continue;
      if (opt->get_required())
        line += " " + opt->get_name() + " " + opt->get_type_name();
      else
        optional = true;
    }
    if (optional) line += " [options]";
    for (const CLI::Option* opt : app->get_options()) {
      if (opt->nonpositional()) continue;
      if (opt->get_expected_max() > 1) // the rest of the line, after "--"
        line += " -- " + opt->get_name() + " [ARGS...]";
      else
        line += " " + (opt->get_required() ? opt->get_name() : "[" + opt->get_name() + "]");
    }
    return line + "\n";
  }
};

std::shared_ptr<Formatter> formatter() {
  static auto f = std::make_shared<Formatter>();
  return f;
}

// The subcommand the command line reached: where a usage error is reported.
const CLI::App* reached(const CLI::App& app) {
  const CLI::App* at = &app;
  for (auto subs = at->get_subcommands(); !subs.empty(); subs = at->get_subcommands())
    at = subs.back();
  return at;
}

// "unknown alloc command \"frob\"; known: run, relayout".
std::string unknown_command(const CLI::App* at, const std::string& given) {
  std::string known;
  for (const CLI::App* sub : subcommands_of(at))
    known += (known.empty() ? "" : ", ") + sub->get_name();
  const std::string command = command_of(at);
  return "unknown " + (command.empty() ? "" : command + " ") + "command \"" + given +
         "\"; known: " + known;
}

// "alloc run: " before a message, so that it says which subcommand it is about.
std::string where(const CLI::App* at) {
  const std::string command = command_of(at);
  return command.empty() ? "" : command + ": ";
}

// CLI11's message in the words the hand-written parsers used, where they differ.
std::string explain(const CLI::App* at, const CLI::ParseError& e) {
  const std::vector<std::string> left = at->remaining();
  if (!left.empty()) {
    if (left[0].rfind("-", 0) == 0) return where(at) + "unknown option " + left[0];
    if (!subcommands_of(at).empty() && at->get_subcommands().empty())
      return unknown_command(at, left[0]);
    return where(at) + "unexpected argument " + left[0];
  }
  std::smatch m;
  const std::string what = e.what();
  if (std::regex_match(what, m, std::regex(R"((\S+): \d+ required .* missing)")))
    return where(at) + m[1].str() + " needs a value";
  return where(at) + what;
}

int usage_error(const CLI::App* at, const std::string& message) {
  std::cerr << "faultline: " << message << "\n"
            << formatter()->make_usage(at, "") << "(see '" << path_of(at) << " --help')\n";
  return 2;
}

} // namespace

std::unique_ptr<CLI::App> make_app() {
  auto app = std::make_unique<CLI::App>("faultline: a trace-driven simulator of GPU unified memory",
                                        "faultline");
  app->formatter(formatter());
  app->require_subcommand(1);
  app->footer("'faultline <command> --help' describes a command.");
  app->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  return app;
}

CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& summary,
                      const std::string& explanation) {
  CLI::App* sub = parent.add_subcommand(name, summary);
  sub->footer(explanation);
  sub->group("Commands");
  return sub;
}

int run_app(CLI::App& app, int argc, char** argv) {
  set_command_line(argc, argv);
  try {
    app.parse(argc, argv);
    return 0;
  } catch (const CLI::CallForHelp&) {
    std::cout << reached(app)->help();
    return 0;
  } catch (const CLI::ParseError& e) {
    const CLI::App* at = reached(app);
    const bool no_command = !subcommands_of(at).empty() && at->get_subcommands().empty();
    if (no_command && at->remaining().empty()) return std::cerr << at->help(), 2;
    return usage_error(at, explain(at, e));
  } catch (const UsageError& e) {
    return usage_error(reached(app), where(reached(app)) + e.what());
  } catch (const std::exception& e) {
    std::cerr << "faultline: error: " << e.what() << "\n";
    return 1;
  }
}

} // namespace faultline::cli
