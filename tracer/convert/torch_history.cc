#include "tracer/convert/torch_history.h"

#include "sim/core/error.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace faultline::capture {
namespace {

[[noreturn]] void bad(const std::string& path, const std::string& where, const std::string& what) {
  throw TraceError(path + ": " + where + ": " + what);
}

BlockEvent block_event(const std::string& path, const nlohmann::json& e, size_t i, bool alloc) {
  const std::string where = "/events/" + std::to_string(i);
  for (int k = 1; k <= 4; ++k)
    if (!e[k].is_number_unsigned())
      bad(path, where + "/" + std::to_string(k), "expected a non-negative integer");
  BlockEvent b;
  b.alloc = alloc;
  b.address = e[1].get<uint64_t>();
  b.size = e[2].get<uint64_t>();
  const uint64_t us = e[4].get<uint64_t>();
  b.time = alloc ? us * 1000 : us * 1000 + 999;
  return b;
}

} // namespace

TorchHistory read_torch_history(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw TraceError(path + ": cannot open PyTorch allocator history: " + std::strerror(errno));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object())
    throw TraceError(path + ": not a JSON object (PyTorch allocator history expected)");
  TorchHistory h;
  if (!j.contains("torch") || !j["torch"].is_string())
    bad(path, "/torch", "expected the PyTorch version string");
  h.torch_version = j["torch"].get<std::string>();
  if (!j.contains("events") || !j["events"].is_array())
    bad(path, "/events", "expected an array of [action, address, size, stream, time_us]");
  const auto& events = j["events"];
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (!e.is_array() || e.size() != 5 || !e[0].is_string())
      bad(path, "/events/" + std::to_string(i),
          "expected [action, address, size, stream, time_us]");
    const std::string action = e[0].get<std::string>();
    if (action == "alloc" || action == "free_completed")
      h.events.push_back(block_event(path, e, i, action == "alloc"));
  }
  return h;
}

} // namespace faultline::capture
