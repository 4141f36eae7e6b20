#include "sim/alloc/pickle.h"

#include "sim/alloc/pickle_opcodes.h"
#include "sim/core/error.h"
#include "sim/core/utf8.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

namespace faultline::alloc {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 1000; // a snapshot nests 6 deep; deeper input is hostile or a cycle
// Shared references are copied out, so a few bytes of memo references could otherwise ask for
// exponentially many values. Real snapshots stay far below this.
constexpr uint64_t kValuesPerByte = 64;
constexpr uint64_t kMinValues = uint64_t{1} << 20;

using namespace pickle;

std::string latin1_to_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<uint8_t>(ch);
    if (c < 0x80) {
      out.push_back(ch);
    } else {
      out.push_back(static_cast<char>(0xc0 | c >> 6));
      out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
    }
  }
  return out;
}

enum class Kind : uint8_t { kScalar, kList, kTuple, kDict, kStrClass };

// Classes a snapshot may name: subclasses of str that programs put into snapshots' metadata
// (torch.__version__ is a TorchVersion). Constructed from one string, they read as that string.
bool is_str_class(std::string_view module, std::string_view name) {
  return module == "torch.torch_version" && name == "TorchVersion";
}

// Containers are built in place while the pickle fills them after memoizing them, so the stack
// and the memo hold node indices (references), and JSON is made only at STOP.
struct Node {
  Kind kind = Kind::kScalar;
  size_t at = 0; // byte offset of the opcode that made it
  json scalar;
  std::vector<size_t> items; // list, tuple: elements; dict: key, value, key, value...
};

class Decoder {
public:
  Decoder(std::string_view bytes, const std::string& path, const PickleOptions& options)
      : bytes_(bytes), path_(path), options_(options),
        budget_(kMinValues + kValuesPerByte * bytes.size()) {}

  json run() {
    while (pos_ < bytes_.size()) {
      at_ = pos_;
      op_ = static_cast<uint8_t>(bytes_[pos_++]);
      if (op_ == kStop) return stop();
      step();
    }
    fail(bytes_.size(), "the pickle ends inside its data: no STOP opcode (a truncated file?)");
  }

private:
  void step() {
    switch (op_) {
    case kProto:
      return proto();
    case kFrame:
      return frame();
    case kMark:
      return marks_.push_back(stack_.size());
    case kNone:
      return push_scalar(nullptr);
    case kNewtrue:
      return push_scalar(true);
    case kNewfalse:
      return push_scalar(false);
    case kBinint:
      return push_int(static_cast<int32_t>(le(4)));
    case kBinint1:
      return push_int(static_cast<int64_t>(le(1)));
    case kBinint2:
      return push_int(static_cast<int64_t>(le(2)));
    case kLong1:
      return long1();
    case kBinfloat:
      return binfloat();
    case kShortBinunicode:
      return unicode(le(1));
    case kBinunicode:
      return unicode(le(4));
    case kBinunicode8:
      return unicode(le(8));
    case kShortBinbytes:
      return push_scalar(latin1_to_utf8(take(le(1))));
    case kBinbytes:
      return push_scalar(latin1_to_utf8(take(le(4))));
    case kBinbytes8:
      return push_scalar(latin1_to_utf8(take(le(8))));
    case kEmptyList:
      return push(Kind::kList, {});
    case kEmptyTuple:
      return push(Kind::kTuple, {});
    case kEmptyDict:
      return push(Kind::kDict, {});
    case kTuple1:
      return tuple(1);
    case kTuple2:
      return tuple(2);
    case kTuple3:
      return tuple(3);
    case kTuple:
      return push(Kind::kTuple, pop_to_mark());
    case kAppend:
      return append();
    case kAppends:
      return appends();
    case kSetitem:
      return setitem();
    case kSetitems:
      return setitems();
    case kMemoize:
      return put(memo_.size());
    case kBinput:
      return put(le(1));
    case kLongBinput:
      return put(le(4));
    case kBinget:
      return get(le(1));
    case kLongBinget:
      return get(le(4));
    case kGlobal:
      return global(line(), line());
    case kStackGlobal:
      return stack_global();
    case kNewobj:
    case kReduce:
      return construct();
    default:
      unsupported();
    }
  }

  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw TraceError(path_ + ": byte " + std::to_string(at) + ": " + what);
  }

  std::string name() const { return opcode_name(op_); }

  [[noreturn]] void unsupported(const std::string& detail = "") const {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op_);
    if (!opcode_name(op_)) fail(at_, std::string(hex) + " is not a pickle opcode");
    fail(at_, "pickle opcode " + describe(op_) +
                  " is not supported: a PyTorch memory snapshot holds only dicts, lists, tuples, "
                  "strings, numbers, booleans and None" +
                  detail);
  }

  // GLOBAL's arguments: text up to a newline.
  std::string line() {
    const size_t end = bytes_.find('\n', pos_);
    if (end == std::string_view::npos)
      fail(at_, "the pickle ends inside the argument of " + name());
    const std::string text(bytes_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return text;
  }

  void global(const std::string& module, const std::string& name) {
    if (!is_str_class(module, name)) unsupported(" (it names " + module + "." + name + ")");
    push(Kind::kStrClass, {});
  }

  void stack_global() {
    need(2);
    const Node& name = nodes_[pop()];
    const Node& module = nodes_[pop()];
    if (!module.scalar.is_string() || !name.scalar.is_string())
      fail(at_, "STACK_GLOBAL needs a module and a name (strings)");
    global(module.scalar.get<std::string>(), name.scalar.get<std::string>());
  }

  // NEWOBJ / REDUCE: only a str subclass from one string, which becomes that string.
  void construct() {
    need(2);
    const Node& args = nodes_[pop()];
    const Node& cls = nodes_[pop()];
    if (cls.kind != Kind::kStrClass || args.kind != Kind::kTuple || args.items.size() != 1 ||
        !nodes_[args.items[0]].scalar.is_string())
      unsupported(" (it builds an object other than a string)");
    push_scalar(nodes_[args.items[0]].scalar);
  }

  // The opcode's next n argument bytes.
  std::string_view take(uint64_t n) {
    const size_t left = bytes_.size() - pos_;
    if (n > left) {
      fail(at_, "the pickle ends inside the argument of " + name() + ": " + std::to_string(n) +
                    " bytes needed, " + std::to_string(left) + " left");
    }
    const std::string_view s = bytes_.substr(pos_, n);
    pos_ += n;
    return s;
  }

  uint64_t le(size_t n) {
    const std::string_view s = take(n);
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = v << 8 | static_cast<uint8_t>(s[i]);
    return v;
  }

  void proto() {
    const uint64_t version = le(1);
    if (version < 2 || version > 5)
      fail(at_,
           "pickle protocol " + std::to_string(version) + " is not supported; expected 2 to 5");
  }

  // Frames only group opcodes for buffered reading; their contents are read as if unframed.
  void frame() {
    const uint64_t n = le(8);
    const size_t left = bytes_.size() - pos_;
    if (n > left) {
      fail(at_, "the pickle ends inside the FRAME that starts here: " + std::to_string(n) +
                    " bytes announced, " + std::to_string(left) + " left");
    }
  }

  void push(Kind kind, std::vector<size_t> items) {
    Node node;
    node.kind = kind;
    node.at = at_;
    node.items = std::move(items);
    stack_.push_back(nodes_.size());
    nodes_.push_back(std::move(node));
  }

  void push_scalar(json value) {
    Node node;
    node.at = at_;
    node.scalar = std::move(value);
    stack_.push_back(nodes_.size());
    nodes_.push_back(std::move(node));
  }

  // Non-negative integers are held unsigned, as nlohmann's parser holds them.
  void push_int(int64_t v) {
    if (v >= 0) return push_scalar(static_cast<uint64_t>(v));
    push_scalar(v);
  }

  // A little-endian two's-complement integer of n bytes; refused if it needs more than 64 bits
  // (as unsigned when positive, signed when negative).
  void long1() {
    const uint64_t n = le(1);
    const std::string_view s = take(n);
    if (n == 0) return push_scalar(uint64_t{0});
    const bool negative = static_cast<uint8_t>(s[n - 1]) & 0x80;
    const uint8_t fill = negative ? 0xff : 0x00;
    bool fits = n <= 8 || !negative || (static_cast<uint8_t>(s[7]) & 0x80);
    for (size_t i = 8; i < n; ++i) fits = fits && static_cast<uint8_t>(s[i]) == fill;
    if (!fits) {
      fail(at_, "LONG1 integer of " + std::to_string(n) +
                    " bytes does not fit in 64 bits; a memory snapshot holds none that large");
    }
    uint64_t v = 0;
    for (size_t i = std::min<size_t>(n, 8); i-- > 0;) v = v << 8 | static_cast<uint8_t>(s[i]);
    if (negative && n < 8) v |= ~uint64_t{0} << (8 * n);
    if (negative) return push_scalar(static_cast<int64_t>(v));
    push_scalar(v);
  }

  void binfloat() {
    const std::string_view s = take(8);
    uint64_t bits = 0;
    for (const char c : s) bits = bits << 8 | static_cast<uint8_t>(c); // big-endian
    double d = 0;
    std::memcpy(&d, &bits, sizeof d);
    push_scalar(d);
  }

  void unicode(uint64_t n) {
    const std::string_view s = take(n);
    if (!valid_utf8(s)) fail(at_, name() + " string is not valid UTF-8");
    push_scalar(std::string(s));
  }

  size_t above_mark() const { return stack_.size() - (marks_.empty() ? 0 : marks_.back()); }

  void need(size_t n) const {
    const size_t have = above_mark();
    if (have < n) {
      fail(at_, name() + " needs " + std::to_string(n) + " value(s) on the stack, found " +
                    std::to_string(have) + (marks_.empty() ? "" : " above the last MARK"));
    }
  }

  size_t pop() {
    const size_t id = stack_.back();
    stack_.pop_back();
    return id;
  }

  std::vector<size_t> pop_to_mark() {
    if (marks_.empty()) fail(at_, name() + " without a MARK before it");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<size_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }

  void tuple(size_t n) {
    need(n);
    std::vector<size_t> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    push(Kind::kTuple, std::move(items));
  }

  static const char* kind_name(const Node& n) {
    switch (n.kind) {
    case Kind::kList:
      return "a list";
    case Kind::kTuple:
      return "a tuple";
    case Kind::kDict:
      return "a dict";
    default:
      break;
    }
    if (n.scalar.is_string()) return "a string";
    if (n.scalar.is_number()) return "a number";
    if (n.scalar.is_boolean()) return "a boolean";
    return "None";
  }

  // The container on top of the stack, which the opcode fills.
  Node& target(Kind kind) {
    need(1);
    Node& n = nodes_[stack_.back()];
    if (n.kind != kind) {
      fail(at_, name() + " adds to " + kind_name(n) + "; expected " +
                    (kind == Kind::kList ? "a list" : "a dict"));
    }
    return n;
  }

  void append() {
    need(2);
    const size_t value = pop();
    target(Kind::kList).items.push_back(value);
  }

  void appends() {
    const std::vector<size_t> values = pop_to_mark();
    std::vector<size_t>& items = target(Kind::kList).items;
    items.insert(items.end(), values.begin(), values.end());
  }

  void check_key(size_t id) const {
    const Node& key = nodes_[id];
    if (key.kind != Kind::kScalar || !(key.scalar.is_string() || key.scalar.is_number_integer()))
      fail(at_,
           name() + " with a key that is " + kind_name(key) + "; expected a string or integer");
  }

  void setitem() {
    need(3);
    const size_t value = pop();
    const size_t key = pop();
    check_key(key);
    std::vector<size_t>& items = target(Kind::kDict).items;
    items.push_back(key);
    items.push_back(value);
  }

  void setitems() {
    const std::vector<size_t> pairs = pop_to_mark();
    if (pairs.size() % 2 != 0) {
      fail(at_, "SETITEMS with " + std::to_string(pairs.size()) +
                    " values after its MARK; expected key, value pairs");
    }
    for (size_t i = 0; i < pairs.size(); i += 2) check_key(pairs[i]);
    std::vector<size_t>& items = target(Kind::kDict).items;
    items.insert(items.end(), pairs.begin(), pairs.end());
  }

  void put(uint64_t index) {
    need(1);
    memo_[index] = stack_.back();
  }

  void get(uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end())
      fail(at_, name() + " of memo index " + std::to_string(index) + ", which is not defined");
    stack_.push_back(it->second);
  }

  json stop() {
    if (stack_.size() != 1 || !marks_.empty()) {
      fail(at_, "STOP with " + std::to_string(stack_.size()) + " value(s) and " +
                    std::to_string(marks_.size()) + " MARK(s) on the stack; expected one value");
    }
    if (pos_ != bytes_.size()) {
      fail(pos_, std::to_string(bytes_.size() - pos_) +
                     " bytes follow the pickle's STOP; expected the end of the data");
    }
    return value(stack_[0], 0);
  }

  std::string key_string(size_t id) const {
    const json& k = nodes_[id].scalar;
    if (k.is_string()) return k.get<std::string>();
    return k.dump(); // an integer: its decimal digits
  }

  json value(size_t id, int depth) {
    const Node& n = nodes_[id];
    if (depth > kMaxDepth) {
      fail(n.at, "the value made here is nested more than " + std::to_string(kMaxDepth) +
                     " deep (a container inside itself?)");
    }
    if (++made_ > budget_) {
      fail(at_, "the pickle's shared references expand to more than " + std::to_string(budget_) +
                    " values; a memory snapshot holds far fewer");
    }
    if (n.kind == Kind::kScalar) return n.scalar;
    if (n.kind != Kind::kDict) {
      json a = json::array();
      for (const size_t item : n.items) a.push_back(value(item, depth + 1));
      return a;
    }
    json o = json::object();
    for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
      std::string key = key_string(n.items[i]);
      if (options_.skip_keys.count(key)) continue;
      o[std::move(key)] = value(n.items[i + 1], depth + 1);
    }
    return o;
  }

  std::string_view bytes_;
  const std::string& path_;
  const PickleOptions& options_;
  size_t pos_ = 0;
  size_t at_ = 0; // offset of the opcode being decoded
  uint8_t op_ = 0;
  std::vector<Node> nodes_;
  std::vector<size_t> stack_;
  std::vector<size_t> marks_; // stack sizes at each open MARK
  std::unordered_map<uint64_t, size_t> memo_;
  uint64_t budget_;
  uint64_t made_ = 0;
};

} // namespace

json decode_pickle(std::string_view bytes, const std::string& path, const PickleOptions& options) {
  return Decoder(bytes, path, options).run();
}

} // namespace faultline::alloc
