#include "fuzz_support.h"

#include <stdexcept>
#include <sys/mman.h>
#include <unistd.h>

namespace fuzz {

InputFile::InputFile(const char* name) : fd_(memfd_create(name, 0)) {
  if (fd_ < 0) throw std::runtime_error("memfd_create failed");
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

InputFile::~InputFile() {
  close(fd_);
}

const std::string& InputFile::write(std::string_view bytes) {
  if (ftruncate(fd_, 0) != 0) throw std::runtime_error("ftruncate failed");
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = pwrite(fd_, bytes.data() + done, bytes.size() - done, done);
    if (n <= 0) throw std::runtime_error("pwrite failed");
    done += static_cast<size_t>(n);
  }
  return path_;
}

} // namespace fuzz
