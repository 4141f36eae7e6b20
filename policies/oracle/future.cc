#include "policies/oracle/future.h"

#include "sim/trace/step_repeater.h"

#include <algorithm>

namespace faultline::policies::oracle {

Future::Future(const std::string& path, uint64_t iterations) {
  trace::StepRepeater reader(path, iterations);
  trace::Record r;
  std::map<Addr, Addr> device; // start -> end of live device allocations
  std::unordered_map<uint64_t, Addr> device_ids;
  while (reader.next(r)) {
    if (r.type == trace::RecordType::kAlloc && r.alloc.kind == trace::MemoryKind::kDevice) {
      device[r.alloc.address] = r.alloc.address + r.alloc.size;
      device_ids[r.alloc.id] = r.alloc.address;
    } else if (r.type == trace::RecordType::kFree && device_ids.count(r.free.id)) {
      device.erase(device_ids[r.free.id]);
      device_ids.erase(r.free.id);
    } else if (r.type == trace::RecordType::kKernel) {
      add_kernel(r.kernel.accesses, device);
    } else if (r.type == trace::RecordType::kHostAccess) {
      add_host(r.host.address, r.host.size);
    }
  }
}

const std::vector<BlockUse>& Future::host_before(uint64_t kernel) const {
  static const std::vector<BlockUse> none;
  return kernel < host_before_.size() ? host_before_[kernel] : none;
}

When Future::next_use(uint64_t block, When now) const {
  auto it = kernels_of_block_.find(block);
  if (it == kernels_of_block_.end()) return kNever;
  const auto& uses = it->second;
  auto k = std::lower_bound(uses.begin(), uses.end(), now.kernel,
                            [](const KernelUse& u, uint64_t kernel) { return u.kernel < kernel; });
  if (k != uses.end() && k->kernel == now.kernel) {
    if (k->last >= now.access) return {now.kernel, std::max(k->first, now.access)};
    ++k;
  }
  return k == uses.end() ? kNever : When{k->kernel, k->first};
}

void Future::add_kernel(const std::vector<trace::Access>& accesses,
                        const std::map<Addr, Addr>& device) {
  const uint64_t index = blocks_of_kernel_.size();
  std::vector<BlockUse> blocks;
  std::unordered_map<uint64_t, size_t> slot;
  for (size_t i = 0; i < accesses.size(); ++i) {
    const Addr address = accesses[i].big_page * kBigPageSize;
    auto d = device.upper_bound(address);
    if (d != device.begin() && address < std::prev(d)->second) continue; // never migrates
    const uint64_t block = address / kBlockSize;
    const auto at = static_cast<uint32_t>(std::min<size_t>(i, UINT32_MAX));
    auto [it, fresh] = slot.emplace(block, blocks.size());
    if (fresh) blocks.push_back({block, 0, at, at});
    BlockUse& use = blocks[it->second];
    use.pages |= PageBits{1} << (accesses[i].big_page % kPagesPerBlock);
    use.last = at;
  }
  for (const BlockUse& use : blocks)
    kernels_of_block_[use.block].push_back({index, use.first, use.last});
  blocks_of_kernel_.push_back(std::move(blocks));
}

// Host touches move pages to the host (the simulator keeps no duplicates): recorded against the
// kernel that comes next.
void Future::add_host(Addr address, Bytes bytes) {
  if (host_before_.size() <= blocks_of_kernel_.size())
    host_before_.resize(blocks_of_kernel_.size() + 1);
  std::vector<BlockUse>& touched = host_before_[blocks_of_kernel_.size()];
  for (Addr a = address / kBigPageSize * kBigPageSize; a < address + bytes; a += kBigPageSize) {
    const uint64_t block = a / kBlockSize;
    if (touched.empty() || touched.back().block != block) touched.push_back({block, 0, 0, 0});
    touched.back().pages |= PageBits{1} << (a / kBigPageSize % kPagesPerBlock);
  }
}

} // namespace faultline::policies::oracle
