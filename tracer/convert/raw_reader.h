// Reads a raw capture stream (tracer/raw/raw_format.h) into memory, checking its framing.
#pragma once

#include "tracer/raw/raw_format.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace faultline::capture {

// One host-side event in program order.
struct ApiEvent {
  raw::RawType type = raw::RawType::kLaunch;
  uint64_t cpu_time = 0;
  raw::RawLaunch launch{};       // kLaunch
  std::string name;              // kLaunch: mangled kernel name
  std::vector<uint64_t> words;   // kLaunch: candidate pointer words of the arguments
  raw::RawCopy copy{};           // kCopy
  raw::RawAlloc alloc{};         // kAlloc
  raw::RawFree free{};           // kFree
  raw::RawSync sync{};           // kSync, kGraphLaunch
  raw::RawRange range{};         // kRange
  raw::RawEvict evict{};         // kEvict
  raw::RawPages pages{};         // kPages
  std::vector<uint32_t> entries; // kPages: raw::PageEntry values
  raw::RawHostTouch touch{};     // kHostTouch
};

struct RawStream {
  std::string path;
  nlohmann::json meta = nlohmann::json::object(); // all meta records merged
  std::vector<ApiEvent> api;
  std::vector<raw::RawKernelAct> kernels;
  std::vector<raw::RawCopyAct> copies;
  std::vector<raw::RawUm> um;
  std::vector<raw::RawSyncAct> syncs;
  uint64_t synthesized_syncs = 0; // syncs added from CUPTI's records: their calls went unrecorded
  std::vector<raw::RawMemoryAct> memory;
  std::vector<raw::RawApiAct> calls;       // program pass: the CPU's calls, timed by CUPTI
  std::vector<raw::RawKernelShape> shaped; // program pass: kernels with their grids
  uint64_t dropped = 0;
  std::string error; // the injector's own error, if it stopped the program
  bool ended = false;
};

// Throws TraceError naming the file, record number and byte offset of the first defect:
// a bad magic or version, a record running past the end, a payload of the wrong size, an
// unknown record type, or a missing end record.
RawStream read_raw(const std::string& path);

} // namespace faultline::capture
