// Chrome trace-event JSON (opens in the Perfetto UI): kernels, fault batches, link transfers.
#pragma once

#include "sim/gpu/kernel_runner.h"
#include "sim/link/link.h"
#include "sim/uvm/fault_servicer.h"

#include <cstdio>
#include <map>
#include <string>

namespace faultline {

class Timeline : public TransferObserver, public BatchObserver, public KernelObserver {
public:
  explicit Timeline(const std::string& path);
  ~Timeline() override;
  void close();

  void on_transfer(const std::string& link, Bytes bytes, Transfer t, const char* cause) override;
  void on_fault_batch(unsigned gpu, Time start, Time end, uint64_t faults,
                      uint64_t blocks) override;
  void on_kernel(unsigned gpu, const KernelRow& row) override;

private:
  void event(const std::string& name, int pid, int tid, Time start, Time end,
             const std::string& args);
  int thread(int pid, const std::string& name);

  std::string path_;
  std::FILE* file_ = nullptr;
  bool first_ = true;
  std::map<std::pair<int, std::string>, int> threads_;
};

} // namespace faultline
