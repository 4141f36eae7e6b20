// Turns a timing pass and an access pass of the same program (and optionally PyTorch's allocator
// history of the timing pass, and a program pass) into a trace: allocations, frees and syncs in
// the timing pass's order, at its times moved onto the program pass's clock (tracer/convert/
// program_pass.h), each operation with its all-resident duration from the timing pass and its
// access set from the access pass.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace faultline::capture {

struct ConvertRequest {
  std::string timing_path;
  std::string access_path;
  std::string history_path; // empty: no PyTorch history
  std::string out_path;
  nlohmann::json metadata = nlohmann::json::object(); // merged into the trace header
  std::string program_path; // the program pass's raw stream; empty: the timing pass's clock
};

// Writes the trace and returns the capture summary (also stored in the header under "capture").
// Throws TraceError when an input is unreadable or the passes disagree.
nlohmann::json convert_capture(const ConvertRequest& request);

} // namespace faultline::capture
