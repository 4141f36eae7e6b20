#include "sim/alloc/allocator.h"

#include "sim/alloc/caching.h"
#include "sim/alloc/gmlake.h"
#include "sim/core/error.h"

#include <algorithm>
#include <map>

namespace faultline::alloc {
namespace {

const std::map<std::string, AllocatorFactory>& registry() {
  static const std::map<std::string, AllocatorFactory> models = {
      {"caching",
       [](const Options& o, Driver& d) { return std::make_unique<CachingAllocator>(o, d, false); }},
      {"expandable",
       [](const Options& o, Driver& d) { return std::make_unique<CachingAllocator>(o, d, true); }},
      {"gmlake",
       [](const Options& o, Driver& d) { return std::make_unique<GMLakeAllocator>(o, d); }},
  };
  return models;
}

} // namespace

std::vector<std::string> allocator_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

void require_allocator(const std::string& name) {
  if (registry().count(name) != 0) return;
  std::string known;
  for (const auto& n : allocator_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError("unknown allocator '" + name + "'; known allocators: " + known);
}

std::unique_ptr<Allocator> make_allocator(const std::string& name, const Options& options,
                                          Driver& driver) {
  require_allocator(name);
  return registry().at(name)(options, driver);
}

void Usage::on_malloc(Bytes block, Bytes request, Bytes reserved_now) {
  ++mallocs;
  allocated += block;
  requested += request;
  peak_allocated = std::max(peak_allocated, allocated);
  peak_requested = std::max(peak_requested, requested);
  on_reserved(reserved_now);
}

void Usage::on_free(Bytes block, Bytes request, Bytes reserved_now) {
  ++frees;
  allocated -= block;
  requested -= request;
  on_reserved(reserved_now);
}

void Usage::on_reserved(Bytes reserved_now) {
  reserved = reserved_now;
  peak_reserved = std::max(peak_reserved, reserved);
}

double Usage::fragmentation() const {
  if (peak_reserved == 0) return 0.0;
  return 1.0 - static_cast<double>(peak_allocated) / static_cast<double>(peak_reserved);
}

Bytes round_request(Bytes size) {
  constexpr Bytes kMinBlock = 512;
  if (size < kMinBlock) return kMinBlock;
  return (size + kMinBlock - 1) / kMinBlock * kMinBlock;
}

} // namespace faultline::alloc
