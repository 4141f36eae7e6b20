// The command line the CUDA programs in micro/ share: "--NAME VALUE" options that take a whole
// number within bounds, and "--NAME" flags. Anything else exits with status 2 and a message that
// names the program, the option and what was expected.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>

namespace micro {

struct Option {
  const char* name;
  std::function<void(unsigned long long)> set; // a flag is set to 1
  unsigned long long min = 0, max = 0;
  bool flag = false;
};

template <typename T>
Option whole(const char* name, T& into, unsigned long long min, unsigned long long max) {
  return {name, [&into](unsigned long long v) { into = static_cast<T>(v); }, min, max, false};
}

inline Option flag(const char* name, bool& into) {
  return {name, [&into](unsigned long long) { into = true; }, 0, 0, true};
}

inline void parse(const char* program, int argc, char** argv,
                  std::initializer_list<Option> options) {
  std::string known;
  for (const Option& o : options) known += (known.empty() ? "" : ", ") + std::string(o.name);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const Option* match = nullptr;
    for (const Option& o : options)
      if (a == o.name) match = &o;
    if (!match) {
      std::fprintf(stderr, "%s: unknown option %s (expected %s)\n", program, a.c_str(),
                   known.c_str());
      std::exit(2);
    }
    if (match->flag) {
      match->set(1);
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: %s needs a value\n", program, a.c_str());
      std::exit(2);
    }
    const char* v = argv[++i];
    char* end = nullptr;
    const unsigned long long x = std::strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end != '\0' || x < match->min || x > match->max) {
      std::fprintf(stderr, "%s: %s expects a whole number from %llu to %llu, not '%s'\n", program,
                   a.c_str(), match->min, match->max, v);
      std::exit(2);
    }
    match->set(x);
  }
}

} // namespace micro
