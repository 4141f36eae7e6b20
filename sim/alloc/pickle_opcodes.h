// Python pickle's opcodes (protocols 0 to 5, as in Python's pickletools): the ones the snapshot
// decoder (pickle.h) reads, and the name of every one, so that a refusal names what it met.
#pragma once

#include <cstdint>
#include <string>

namespace faultline::alloc::pickle {

// The opcodes the decoder executes; any other is refused by name.
enum Op : uint8_t {
  kMark = 0x28,
  kEmptyTuple = 0x29,
  kStop = 0x2e,
  kBinbytes = 0x42,
  kShortBinbytes = 0x43,
  kBinfloat = 0x47,
  kBinint = 0x4a,
  kBinint1 = 0x4b,
  kBinint2 = 0x4d,
  kNone = 0x4e,
  kReduce = 0x52,
  kBinunicode = 0x58,
  kGlobal = 0x63,
  kEmptyList = 0x5d,
  kAppend = 0x61,
  kAppends = 0x65,
  kBinget = 0x68,
  kLongBinget = 0x6a,
  kBinput = 0x71,
  kLongBinput = 0x72,
  kSetitem = 0x73,
  kTuple = 0x74,
  kSetitems = 0x75,
  kEmptyDict = 0x7d,
  kProto = 0x80,
  kNewobj = 0x81,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewtrue = 0x88,
  kNewfalse = 0x89,
  kLong1 = 0x8a,
  kShortBinunicode = 0x8c,
  kBinunicode8 = 0x8d,
  kBinbytes8 = 0x8e,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
};

// The opcode's name ("GLOBAL"), or nullptr for a byte that is no pickle opcode.
const char* opcode_name(uint8_t code);

// "0x63 ('c' GLOBAL)", or "0x93 (STACK_GLOBAL)" where the byte is not printable, or "0xff".
std::string describe(uint8_t code);

} // namespace faultline::alloc::pickle
