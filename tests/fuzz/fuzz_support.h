// What every fuzz target shares: the input as a file the real reader opens, and the rule that a
// faultline::Error (a located message for a bad input) is the expected way to refuse it.
//
// Contract: a target calls accept_errors(fn) around the entry point the CLI uses. A
// faultline::Error returns normally; anything else (another exception, a crash, a sanitizer
// report, a leak, a hang past -timeout) reaches libFuzzer as a finding.
#pragma once

#include "sim/core/error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fuzz {

// An in-memory file (memfd) that holds the current input, reached by a /proc/self/fd path, so
// that the readers open it as they open any file and nothing touches the disk.
class InputFile {
public:
  explicit InputFile(const char* name);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Replaces the file's content with `bytes`; returns the path to open it by.
  const std::string& write(std::string_view bytes);
  const std::string& path() const { return path_; }

private:
  int fd_ = -1;
  std::string path_;
};

inline std::string_view view(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

template <class F> void accept_errors(F&& fn) {
  try {
    fn();
  } catch (const faultline::Error&) {
    // The input was refused with a located message: the outcome a bad input should have.
  }
}

} // namespace fuzz
