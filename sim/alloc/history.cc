#include "sim/alloc/history.h"

#include "sim/alloc/history_bytes.h"
#include "sim/alloc/pickle.h"
#include "sim/config/reader.h"
#include "sim/core/error.h"
#include "sim/trace/reader.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace faultline::alloc {
namespace {

using nlohmann::json;

constexpr Bytes kMinBlock = 512; // PyTorch's kMinBlockSize: its allocated bytes count whole blocks
constexpr uint64_t kMaxTimeUs = INT64_MAX / 1000;
// Enough to hold a trace's first zstd block (128 KB at most), so a trace is recognised without
// reading it whole.
constexpr size_t kSniffBytes = 256 * 1024;
constexpr const char* kNotHistory =
    "not a PyTorch memory snapshot (pickle or JSON), allocator history or faultline trace";

[[noreturn]] void bad(const std::string& label, const std::string& where, const std::string& what) {
  throw TraceError(label + ": " + where + ": " + what);
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// Turns allocs and frees, in the allocator's order, into a History's events. A free of a block
// the history never allocated is of one allocated before recording began: it becomes an
// allocation at time 0. `where` names the entry for messages; it is called only on error.
class Builder {
public:
  template <class Where>
  void alloc(Addr address, Bytes size, uint64_t stream, Time time, const Where& where) {
    if (!live_.emplace(address, size).second)
      throw TraceError(where() + ": alloc at " + hex(address) + ", which is already live");
    seen_.insert(address);
    check_live(live_bytes_, size, "allocations live here", where);
    add(Event{true, address, size, stream, time});
  }

  template <class Where>
  void free(Addr address, Bytes size, uint64_t stream, Time time, const Where& where) {
    auto it = live_.find(address);
    if (it == live_.end()) {
      if (seen_.count(address)) {
        throw TraceError(where() + ": free of " + hex(address) +
                         ", which was freed already (a double free)");
      }
      seen_.insert(address);
      // All of these are live together at time 0, where the replay allocates them.
      check_live(before_bytes_, size, "blocks allocated before recording began, up to here,",
                 where);
      before_.push_back(Event{true, address, size, stream, 0});
    } else {
      live_bytes_ -= it->second;
      live_.erase(it);
    }
    add(Event{false, address, size, stream, time});
  }

  void finish(History& h) {
    h.blocks_before_history = before_.size();
    h.events = std::move(before_);
    h.events.reserve(h.events.size() + events_.size());
    for (Event e : events_) {
      e.time -= origin_;
      h.events.push_back(e);
    }
    h.recorded.peak_allocated = peak_allocated(h.events);
  }

private:
  // A model replays what is live at once; a size no GPU holds would have it build (and check)
  // millions of 2 MB chunks from a few bytes of input.
  template <class Where>
  static void check_live(Bytes& sum, Bytes size, const char* what, const Where& where) {
    if (size > kMaxLiveBytes - sum) {
      throw TraceError(where() + ": " + what + " add up to more than " +
                       std::to_string(kMaxLiveBytes >> 40) + " TiB (" + std::to_string(sum) +
                       " + " + std::to_string(size) + " bytes), more than any GPU holds");
    }
    sum += size;
  }

  void add(const Event& e) {
    if (events_.empty()) origin_ = e.time;
    events_.push_back(e);
  }

  // As PyTorch counts allocated bytes: whole blocks of 512.
  static Bytes peak_allocated(const std::vector<Event>& events) {
    std::unordered_map<Addr, Bytes> live;
    Bytes sum = 0, peak = 0;
    for (const Event& e : events) {
      if (e.alloc) {
        const Bytes rounded = (e.size + kMinBlock - 1) / kMinBlock * kMinBlock;
        live[e.address] = rounded;
        sum += rounded;
        peak = std::max(peak, sum);
      } else {
        sum -= live[e.address];
        live.erase(e.address);
      }
    }
    return peak;
  }

  std::unordered_map<Addr, Bytes> live_;
  Bytes live_bytes_ = 0, before_bytes_ = 0;
  std::unordered_set<Addr> seen_;
  std::vector<Event> before_, events_;
  Time origin_ = 0;
};

// Reserved bytes over the history. A segment freed beyond what the history reserved was
// reserved before recording began, so it counts from the start: the least reserved memory the
// events allow.
struct Reserved {
  Bytes current = 0, peak = 0;
  uint64_t allocs = 0, frees = 0;

  void add(Bytes size) {
    ++allocs;
    current += size;
    peak = std::max(peak, current);
  }
  void remove(Bytes size) {
    ++frees;
    if (size > current) {
      peak += size - current;
      current = size;
    }
    current -= size;
  }
  void record(Recorded& r) const {
    r.has_segments = allocs + frees > 0;
    r.peak_reserved = peak;
    r.segment_allocs = allocs;
    r.segment_frees = frees;
  }
};

enum class Action { kAlloc, kFreeRequested, kFreeCompleted, kSegmentAlloc, kSegmentFree, kOther };

// One allocator trace entry, its fields checked.
struct Entry {
  Action action = Action::kOther;
  Addr addr = 0;
  Bytes size = 0;
  uint64_t stream = 0;
  uint64_t time_us = 0;
  size_t index = 0;
};

Action parse_action(const json* v, const std::string& label, const std::string& where) {
  static const std::unordered_map<std::string, Action> kActions = {
      {"alloc", Action::kAlloc},
      {"free_requested", Action::kFreeRequested},
      {"free_completed", Action::kFreeCompleted},
      {"segment_alloc", Action::kSegmentAlloc},
      {"segment_map", Action::kSegmentAlloc},
      {"segment_free", Action::kSegmentFree},
      {"segment_unmap", Action::kSegmentFree},
      {"oom", Action::kOther},
      {"snapshot", Action::kOther},
      {"annotate", Action::kOther},
      {"user_defined", Action::kOther}, // what newer PyTorch calls annotations
  };
  if (!v || !v->is_string())
    bad(label, where,
        std::string("expected the action string, got ") + (v ? config::type_name(*v) : "nothing"));
  const auto it = kActions.find(v->get<std::string>());
  if (it == kActions.end()) {
    bad(label, where,
        "unknown action \"" + v->get<std::string>() +
            "\"; expected alloc, free_requested, free_completed, segment_alloc, segment_free, "
            "segment_map, segment_unmap, oom, snapshot, annotate or user_defined");
  }
  return it->second;
}

uint64_t non_negative(const json* v, const std::string& label, const std::string& where) {
  if (!v || !config::is_non_negative_integer(*v)) {
    bad(label, where,
        std::string("expected a non-negative integer, got ") +
            (v ? config::type_name(*v) : "nothing"));
  }
  return v->get<uint64_t>();
}

// Stream handles are identities; PyTorch writes them as signed integers.
uint64_t stream_handle(const json* v, const std::string& label, const std::string& where) {
  if (!v || !v->is_number_integer()) {
    bad(label, where,
        std::string("expected an integer stream handle, got ") +
            (v ? config::type_name(*v) : "nothing"));
  }
  return v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
}

// Fields in the order of the tracer's history arrays: addr, size, stream, time_us.
constexpr const char* kFields[] = {"addr", "size", "stream", "time_us"};

// `field(i)` is the value of kFields[i] (nullptr if missing), `where(i)` its JSON path.
template <class Field, class Where>
void read_fields(Entry& e, const std::string& label, const Field& field, const Where& where) {
  e.addr = non_negative(field(0), label, where(0));
  e.size = non_negative(field(1), label, where(1));
  e.stream = stream_handle(field(2), label, where(2));
  e.time_us = non_negative(field(3), label, where(3));
  if (e.time_us > kMaxTimeUs)
    bad(label, where(3), "expected microseconds below 2^63 ns, got " + std::to_string(e.time_us));
}

const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A snapshot's trace entry: {"action", "addr", "size", "stream", "time_us", ...}.
Entry snapshot_entry(const json& v, const std::string& label, const std::string& at) {
  if (!v.is_object()) {
    bad(label, at,
        std::string("expected a trace entry (a dict with action, addr, size, stream ") +
            "and time_us), got " + config::type_name(v));
  }
  Entry e;
  e.action = parse_action(member(v, "action"), label, at + "/action");
  if (e.action == Action::kOther) return e; // an oom entry has device_free, not addr
  read_fields(
      e, label, [&](int i) { return member(v, kFields[i]); },
      [&](int i) { return at + "/" + kFields[i]; });
  return e;
}

// A tracer history's event: [action, address, size, stream, time_us].
Entry history_entry(const json& v, const std::string& label, const std::string& at) {
  if (!v.is_array() || v.size() != 5)
    bad(label, at, "expected [action, address, size, stream, time_us]");
  Entry e;
  e.action = parse_action(&v[0], label, at + "/0");
  if (e.action == Action::kOther) return e;
  read_fields(
      e, label, [&](int i) { return &v[i + 1]; },
      [&](int i) { return at + "/" + std::to_string(i + 1); });
  return e;
}

// Frees are PyTorch's free_completed (the block is reusable) unless the trace holds none, as
// when it was recorded without them; then free_requested.
void replay(const std::vector<Entry>& entries, const std::string& label, const std::string& prefix,
            History& h) {
  const bool completed = std::any_of(entries.begin(), entries.end(), [](const Entry& e) {
    return e.action == Action::kFreeCompleted;
  });
  const Action free_action = completed ? Action::kFreeCompleted : Action::kFreeRequested;
  Builder b;
  Reserved reserved;
  for (const Entry& e : entries) {
    const auto where = [&] { return label + ": " + prefix + std::to_string(e.index); };
    const auto time = static_cast<Time>(e.time_us * 1000);
    if (e.action == Action::kAlloc)
      b.alloc(e.addr, e.size, e.stream, time, where);
    else if (e.action == free_action)
      b.free(e.addr, e.size, e.stream, time, where);
    else if (e.action == Action::kSegmentAlloc)
      reserved.add(e.size);
    else if (e.action == Action::kSegmentFree)
      reserved.remove(e.size);
  }
  b.finish(h);
  reserved.record(h.recorded);
}

std::string join(const std::vector<size_t>& values) {
  std::string out;
  for (const size_t v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

size_t pick_device(const json& traces, const std::string& label, int device) {
  std::vector<size_t> busy;
  for (size_t d = 0; d < traces.size(); ++d)
    if (!traces[d].empty()) busy.push_back(d);
  const std::string busy_list = busy.empty() ? "none" : join(busy);
  if (device >= 0) {
    const auto d = static_cast<size_t>(device);
    if (d >= traces.size()) {
      bad(label, "/device_traces",
          "device " + std::to_string(d) + " was asked for; the snapshot holds traces of " +
              std::to_string(traces.size()) + " device(s) (with events: " + busy_list + ")");
    }
    if (traces[d].empty()) {
      bad(label, "/device_traces/" + std::to_string(d),
          "device " + std::to_string(d) +
              " recorded no allocator events (devices with events: " + busy_list + ")");
    }
    return d;
  }
  if (busy.empty()) {
    bad(label, "/device_traces",
        "no device recorded allocator events (was torch.cuda.memory._record_memory_history "
        "enabled before the allocations?)");
  }
  if (busy.size() > 1) {
    bad(label, "/device_traces",
        "devices " + busy_list + " all recorded allocator events; choose one of them");
  }
  return busy[0];
}

History from_snapshot(const json& doc, const std::string& label, const ReadOptions& options) {
  const json& traces = doc["device_traces"];
  if (!traces.is_array()) {
    bad(label, "/device_traces",
        std::string("expected an array of trace entry lists, one per device, got ") +
            config::type_name(traces));
  }
  for (size_t d = 0; d < traces.size(); ++d) {
    if (!traces[d].is_array()) {
      bad(label, "/device_traces/" + std::to_string(d),
          std::string("expected an array of trace entries, got ") + config::type_name(traces[d]));
    }
  }
  const size_t device = pick_device(traces, label, options.device);
  const json& trace = traces[device];
  const std::string prefix = "/device_traces/" + std::to_string(device) + "/";
  std::vector<Entry> entries;
  for (size_t i = 0; i < trace.size(); ++i) {
    Entry e = snapshot_entry(trace[i], label, prefix + std::to_string(i));
    e.index = i;
    if (e.action != Action::kOther) entries.push_back(e);
  }
  History h;
  h.source = "pytorch-snapshot";
  replay(entries, label, prefix, h);
  h.metadata = {{"device", device}, {"entries", trace.size()}};
  if (doc.contains("allocator_settings"))
    h.metadata["allocator_settings"] = doc["allocator_settings"];
  if (doc.contains("faultline")) h.metadata["capture"] = doc["faultline"];
  return h;
}

History from_torch_history(const json& doc, const std::string& label) {
  if (!doc["torch"].is_string()) bad(label, "/torch", "expected the PyTorch version string");
  const json& events = doc["events"];
  if (!events.is_array())
    bad(label, "/events", "expected an array of [action, address, size, stream, time_us]");
  std::vector<Entry> entries;
  for (size_t i = 0; i < events.size(); ++i) {
    Entry e = history_entry(events[i], label, "/events/" + std::to_string(i));
    e.index = i;
    if (e.action != Action::kOther) entries.push_back(e);
  }
  History h;
  h.source = "torch-history";
  replay(entries, label, "/events/", h);
  h.metadata = {{"torch", doc["torch"]}, {"entries", events.size()}};
  return h;
}

std::string describe(const json& doc) {
  if (!doc.is_object()) return std::string("a value of type ") + config::type_name(doc);
  std::string keys;
  size_t n = 0;
  for (const auto& [key, value] : doc.items()) {
    if (++n > 8) return "a dict with keys: " + keys + ", ...";
    keys += (keys.empty() ? "" : ", ") + key;
  }
  return "a dict with keys: " + (keys.empty() ? std::string("none") : keys);
}

History from_document(const json& doc, const std::string& label, const ReadOptions& options) {
  if (doc.is_object() && doc.contains("device_traces") && doc.contains("segments"))
    return from_snapshot(doc, label, options);
  if (doc.is_object() && doc.contains("torch") && doc.contains("events"))
    return from_torch_history(doc, label);
  throw TraceError(label + ": " + kNotHistory +
                   "; expected a dict with \"device_traces\" and \"segments\", or with \"torch\" "
                   "and \"events\"; found " +
                   describe(doc));
}

History from_content(const std::string& bytes, const std::string& label,
                     const ReadOptions& options) {
  if (!bytes.empty() && static_cast<uint8_t>(bytes[0]) == 0x80) { // PROTO, protocol 2 and up
    PickleOptions pickle;
    pickle.skip_keys = {"frames"};
    return from_document(decode_pickle(bytes, label, pickle), label, options);
  }
  const size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && bytes[first] == '{')
    return from_document(parse_json_without_frames(bytes, label), label, options);
  throw TraceError(label + ": " + kNotHistory);
}

// A trace's allocator blocks. Its reserved memory is that of the segments that ever hold a
// block: other managed or device allocations are not the allocator's.
History from_trace(const std::string& path) {
  trace::TraceReader reader(path);
  struct Block {
    Addr address;
    Bytes size;
  };
  struct Segment {
    Bytes size;
    bool holds_block;
  };
  std::unordered_map<uint64_t, Block> blocks;    // live block ids
  std::unordered_map<uint64_t, size_t> segments; // live segment id -> index in `seen`
  std::vector<Segment> seen;
  std::vector<std::pair<size_t, bool>> changes; // segment index, alloc
  Builder b;
  trace::Record r;
  while (reader.next(r)) {
    const auto where = [&] { return reader.where(); };
    if (r.type == trace::RecordType::kAlloc && r.alloc.kind == trace::MemoryKind::kAllocatorBlock) {
      blocks[r.alloc.id] = {r.alloc.address, r.alloc.size};
      seen[segments.at(r.alloc.segment)].holds_block = true; // the reader checked it is live
      b.alloc(r.alloc.address, r.alloc.size, 0, r.alloc.time, where);
    } else if (r.type == trace::RecordType::kAlloc) {
      segments[r.alloc.id] = seen.size();
      changes.emplace_back(seen.size(), true);
      seen.push_back({r.alloc.size, false});
    } else if (r.type == trace::RecordType::kFree) {
      if (const auto it = blocks.find(r.free.id); it != blocks.end()) {
        b.free(it->second.address, it->second.size, 0, r.free.time, where);
        blocks.erase(it);
      } else if (const auto s = segments.find(r.free.id); s != segments.end()) {
        changes.emplace_back(s->second, false);
        segments.erase(s);
      }
    }
  }
  History h;
  h.source = "faultline-trace";
  h.metadata = reader.metadata();
  b.finish(h);
  Reserved reserved;
  for (const auto& [index, alloc] : changes) {
    if (!seen[index].holds_block) continue;
    if (alloc)
      reserved.add(seen[index].size);
    else
      reserved.remove(seen[index].size);
  }
  reserved.record(h.recorded);
  h.recorded.has_segments = true;
  return h;
}

} // namespace

History read_history(const std::string& path, const ReadOptions& options) {
  std::string bytes = read_file_head(path, kSniffBytes);
  if (is_zstd(bytes)) {
    const std::string head = zstd_head(bytes, trace::kMagic.size());
    if (head == std::string_view(trace::kMagic.data(), trace::kMagic.size()))
      return from_trace(path);
  }
  if (bytes.size() == kSniffBytes) bytes = read_file_head(path, SIZE_MAX);
  if (!is_zstd(bytes)) return from_content(bytes, path, options);
  return from_content(zstd_decompress(bytes, path), path + " (decompressed)", options);
}

} // namespace faultline::alloc
