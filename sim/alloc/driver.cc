#include "sim/alloc/driver.h"

#include "sim/core/error.h"

#include <string>

namespace faultline::alloc {
namespace {

constexpr Bytes kAlignment = kBlockSize; // VA and physical ranges start on 2 MB boundaries

[[noreturn]] void misuse(const std::string& what) {
  throw SimulationError("allocator driver: " + what);
}

} // namespace

Addr Driver::malloc(Bytes size) {
  ++calls_.malloc;
  const Addr address = do_malloc(size);
  if (address != 0) physical_ += size;
  return address;
}

void Driver::free(Addr address, Bytes size) {
  ++calls_.free;
  do_free(address, size);
  physical_ -= size;
}

Handle Driver::create(Bytes size) {
  ++calls_.create;
  const Handle handle = do_create(size);
  if (handle != 0) physical_ += size;
  return handle;
}

void Driver::release(Handle handle, Bytes size) {
  ++calls_.release;
  do_release(handle, size);
  physical_ -= size;
}

Addr Driver::reserve(Bytes size) {
  ++calls_.reserve;
  return do_reserve(size);
}

void Driver::unreserve(Addr address, Bytes size) {
  ++calls_.unreserve;
  do_unreserve(address, size);
}

void Driver::map(Addr address, Bytes size, Handle handle) {
  ++calls_.map;
  do_map(address, size, handle);
}

void Driver::unmap(Addr address, Bytes size) {
  ++calls_.unmap;
  do_unmap(address, size);
}

bool SimDriver::fits(Bytes size) const {
  return capacity_ == 0 || live_bytes_ + size <= capacity_;
}

Addr SimDriver::next_range(Addr& cursor, Bytes size) {
  const Addr address = cursor;
  cursor += (size + kAlignment - 1) / kAlignment * kAlignment;
  return address;
}

Addr SimDriver::do_malloc(Bytes size) {
  if (!fits(size)) return 0;
  const Addr physical = next_range(next_physical_, size);
  const Addr address = next_range(next_virtual_, size);
  live_bytes_ += size;
  live_physical_[physical] = size;
  mapped_[address] = {size, physical};
  return address;
}

void SimDriver::do_free(Addr address, Bytes size) {
  auto it = mapped_.find(address);
  if (it == mapped_.end() || it->second.size != size)
    misuse("cudaFree of " + std::to_string(address) + " that cudaMalloc did not return");
  live_physical_.erase(it->second.physical);
  mapped_.erase(it);
  live_bytes_ -= size;
}

Handle SimDriver::do_create(Bytes size) {
  if (!fits(size)) return 0;
  const Addr physical = next_range(next_physical_, size);
  live_bytes_ += size;
  live_physical_[physical] = size;
  return physical;
}

void SimDriver::do_release(Handle handle, Bytes size) {
  auto it = live_physical_.find(handle);
  if (it == live_physical_.end() || it->second != size)
    misuse("cuMemRelease of a handle that is not live");
  if (map_count_[handle] != 0) misuse("cuMemRelease of a handle still mapped");
  map_count_.erase(handle);
  live_physical_.erase(it);
  live_bytes_ -= size;
}

Addr SimDriver::do_reserve(Bytes size) {
  const Addr address = next_range(next_virtual_, size);
  reserved_[address] = size;
  return address;
}

void SimDriver::do_unreserve(Addr address, Bytes size) {
  auto it = reserved_.find(address);
  if (it == reserved_.end() || it->second != size)
    misuse("cuMemAddressFree of a range that was not reserved");
  auto m = mapped_.lower_bound(address);
  if (m != mapped_.end() && m->first < address + size)
    misuse("cuMemAddressFree of a range still mapped at " + std::to_string(m->first));
  reserved_.erase(it);
}

void SimDriver::do_map(Addr address, Bytes size, Handle handle) {
  auto r = reserved_.upper_bound(address);
  if (r == reserved_.begin() || std::prev(r)->first + std::prev(r)->second < address + size)
    misuse("cuMemMap outside a reserved range");
  auto h = live_physical_.find(handle);
  if (h == live_physical_.end() || h->second < size)
    misuse("cuMemMap of a handle that is not live");
  auto next = mapped_.lower_bound(address);
  if (next != mapped_.end() && next->first < address + size) misuse("cuMemMap over a mapping");
  if (next != mapped_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > address) misuse("cuMemMap over a mapping");
  }
  mapped_[address] = {size, handle};
  ++map_count_[handle];
}

void SimDriver::do_unmap(Addr address, Bytes size) {
  auto it = mapped_.find(address);
  if (it == mapped_.end() || it->second.size != size) misuse("cuMemUnmap of a range not mapped");
  --map_count_[it->second.physical];
  mapped_.erase(it);
}

std::vector<Fragment> SimDriver::translate(Addr address, Bytes size) const {
  std::vector<Fragment> out;
  const Addr end = address + size;
  auto it = mapped_.upper_bound(address);
  if (it == mapped_.begin()) misuse("translate of an address nothing maps");
  --it;
  for (Addr at = address; at < end; ++it) {
    if (it == mapped_.end() || it->first > at || it->first + it->second.size <= at)
      misuse("translate of a range with a hole at " + std::to_string(at));
    const Bytes offset = at - it->first;
    const Bytes take = std::min(end, it->first + it->second.size) - at;
    const Addr physical = it->second.physical + offset;
    if (!out.empty() && out.back().physical + out.back().bytes == physical)
      out.back().bytes += take;
    else
      out.push_back({physical, take});
    at += take;
  }
  return out;
}

} // namespace faultline::alloc
