#include "sim/alloc/pickle_opcodes.h"

#include <cstdio>

namespace faultline::alloc::pickle {
namespace {

struct OpcodeName {
  uint8_t code;
  const char* name;
};

// Every opcode of protocols 0 to 5 (Python's pickletools), so that a refusal names it.
constexpr OpcodeName kOpcodeNames[] = {
    {0x28, "MARK"},         {0x29, "EMPTY_TUPLE"},
    {0x2e, "STOP"},         {0x30, "POP"},
    {0x31, "POP_MARK"},     {0x32, "DUP"},
    {0x42, "BINBYTES"},     {0x43, "SHORT_BINBYTES"},
    {0x46, "FLOAT"},        {0x47, "BINFLOAT"},
    {0x49, "INT"},          {0x4a, "BININT"},
    {0x4b, "BININT1"},      {0x4c, "LONG"},
    {0x4d, "BININT2"},      {0x4e, "NONE"},
    {0x50, "PERSID"},       {0x51, "BINPERSID"},
    {0x52, "REDUCE"},       {0x53, "STRING"},
    {0x54, "BINSTRING"},    {0x55, "SHORT_BINSTRING"},
    {0x56, "UNICODE"},      {0x58, "BINUNICODE"},
    {0x5d, "EMPTY_LIST"},   {0x61, "APPEND"},
    {0x62, "BUILD"},        {0x63, "GLOBAL"},
    {0x64, "DICT"},         {0x65, "APPENDS"},
    {0x67, "GET"},          {0x68, "BINGET"},
    {0x69, "INST"},         {0x6a, "LONG_BINGET"},
    {0x6c, "LIST"},         {0x6f, "OBJ"},
    {0x70, "PUT"},          {0x71, "BINPUT"},
    {0x72, "LONG_BINPUT"},  {0x73, "SETITEM"},
    {0x74, "TUPLE"},        {0x75, "SETITEMS"},
    {0x7d, "EMPTY_DICT"},   {0x80, "PROTO"},
    {0x81, "NEWOBJ"},       {0x82, "EXT1"},
    {0x83, "EXT2"},         {0x84, "EXT4"},
    {0x85, "TUPLE1"},       {0x86, "TUPLE2"},
    {0x87, "TUPLE3"},       {0x88, "NEWTRUE"},
    {0x89, "NEWFALSE"},     {0x8a, "LONG1"},
    {0x8b, "LONG4"},        {0x8c, "SHORT_BINUNICODE"},
    {0x8d, "BINUNICODE8"},  {0x8e, "BINBYTES8"},
    {0x8f, "EMPTY_SET"},    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},    {0x92, "NEWOBJ_EX"},
    {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"},
    {0x95, "FRAME"},        {0x96, "BYTEARRAY8"},
    {0x97, "NEXT_BUFFER"},  {0x98, "READONLY_BUFFER"},
};

} // namespace

const char* opcode_name(uint8_t code) {
  for (const auto& o : kOpcodeNames)
    if (o.code == code) return o.name;
  return nullptr;
}

std::string describe(uint8_t code) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", code);
  const char* known = opcode_name(code);
  if (!known) return hex;
  const std::string name = known;
  if (code >= 0x20 && code < 0x7f) return std::string(hex) + " ('" + char(code) + "' " + name + ")";
  return std::string(hex) + " (" + name + ")";
}

} // namespace faultline::alloc::pickle
