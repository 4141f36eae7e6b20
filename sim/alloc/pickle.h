// A decoder for the plain-data subset of Python's pickle (protocols 2 to 5): what pickle.dump
// writes for a tree of dicts, lists, tuples, strings, bytes, numbers, booleans and None, which is
// all a PyTorch memory snapshot holds. Every opcode that would build an object (GLOBAL, REDUCE,
// BUILD...) is refused, so reading a file never runs or imports anything.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

namespace faultline::alloc {

struct PickleOptions {
  // Dict values under these keys are left out, key and all. A snapshot's "frames" are most of
  // its bytes, and the frames pickle shares between entries would be copied into each of them.
  std::set<std::string> skip_keys;
};

// Contract: returns the pickled value as JSON. Tuples become arrays; bytes become strings whose
// characters are the bytes read as Latin-1 (so the result is always valid UTF-8); integer dict
// keys become their decimal strings; integers must fit in 64 bits (signed or unsigned). An object
// referenced from several places (the pickle's memo) is copied into each. Exactly one pickle
// must fill `bytes`, ending with its STOP. Any defect (an unsupported opcode, truncation, a stack
// that runs short, a memo index never defined, invalid UTF-8...) throws TraceError
// "PATH: byte B: ..." naming the offset of the opcode at fault. Arbitrary bytes never crash or
// hang it: nesting deeper than 1000 and shared references that expand to far more values than
// the input holds are refused too.
nlohmann::json decode_pickle(std::string_view bytes, const std::string& path,
                             const PickleOptions& options = {});

} // namespace faultline::alloc
