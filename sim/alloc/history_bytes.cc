// The byte layer of reading an allocation history: files read whole or in part, zstd, and JSON
// parsed without the stack frames that make up most of a PyTorch snapshot.
#include "sim/alloc/history_bytes.h"

#include "sim/core/error.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>
#include <zstd.h>

namespace faultline::alloc {

using nlohmann::json;

std::string read_file_head(const std::string& path, size_t limit) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  std::string out;
  std::vector<char> buf(1 << 16);
  while (out.size() < limit) {
    const size_t n = std::fread(buf.data(), 1, std::min(buf.size(), limit - out.size()), f.get());
    out.append(buf.data(), n);
    if (n == 0) break;
  }
  if (std::ferror(f.get())) throw TraceError(path + ": cannot read: " + std::strerror(errno));
  return out;
}

bool is_zstd(std::string_view bytes) {
  return bytes.size() >= 4 && bytes.substr(0, 4) == std::string_view("\x28\xb5\x2f\xfd", 4);
}

namespace {
using Dctx = std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)>;
} // namespace

std::string zstd_head(std::string_view compressed, size_t want) {
  Dctx d(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  std::string out(want, '\0');
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  while (o.pos < o.size && in.pos < in.size) {
    const size_t before = in.pos + o.pos;
    if (ZSTD_isError(ZSTD_decompressStream(d.get(), &o, &in)) || in.pos + o.pos == before) break;
  }
  out.resize(o.pos);
  return out;
}

std::string zstd_decompress(std::string_view compressed, const std::string& path) {
  Dctx d(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  std::string out;
  std::vector<char> buf(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  for (;;) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    const size_t hint = ZSTD_decompressStream(d.get(), &o, &in);
    if (ZSTD_isError(hint)) {
      throw TraceError(path + ": byte " + std::to_string(in.pos) +
                       " of the compressed file: zstd: " + ZSTD_getErrorName(hint));
    }
    out.append(buf.data(), o.pos);
    if (in.pos < in.size || o.pos == o.size) continue;
    if (hint != 0)
      throw TraceError(path + ": the zstd stream ends inside a frame (a truncated file?)");
    return out;
  }
}

namespace {

// Builds the document as nlohmann's parser does, but never builds the values of "frames" keys.

class WithoutFrames : public json::json_sax_t {
public:
  json root;
  size_t error_at = 0;
  std::string error;

  bool null() override { return put(nullptr); }
  bool boolean(bool v) override { return put(v); }
  bool number_integer(number_integer_t v) override { return put(v); }
  bool number_unsigned(number_unsigned_t v) override { return put(v); }
  bool number_float(number_float_t v, const string_t&) override { return put(v); }
  bool string(string_t& v) override { return put(std::move(v)); }
  bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (skip_depth_ == 0) skip_next_ = k == "frames";
    if (skip_depth_ == 0 && !skip_next_) key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error_at = position > 0 ? position - 1 : 0; // nlohmann counts from 1
    error = e.what();
    const size_t bracket = error.find("] ");
    if (bracket != std::string::npos) error.erase(0, bracket + 2);
    return false;
  }

private:
  // Where the next value goes; nullptr while it is skipped.
  json* place(json&& v) {
    if (skip_depth_ > 0 || skip_next_) return nullptr;
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    json& slot = parent[key_];
    slot = std::move(v);
    return &slot;
  }
  bool put(json&& v) {
    place(std::move(v));
    skip_next_ = false;
    return true;
  }
  bool open(json&& container) {
    if (skip_depth_ > 0 || skip_next_) {
      ++skip_depth_;
      skip_next_ = false;
    } else {
      stack_.push_back(place(std::move(container)));
    }
    return true;
  }
  bool close() {
    if (skip_depth_ > 0)
      --skip_depth_;
    else
      stack_.pop_back();
    return true;
  }

  std::vector<json*> stack_; // the open containers being filled
  std::string key_;
  bool skip_next_ = false;
  size_t skip_depth_ = 0; // open containers inside a skipped value
};

} // namespace

json parse_json_without_frames(const std::string& text, const std::string& label) {
  WithoutFrames sax;
  if (!json::sax_parse(text, &sax)) {
    throw TraceError(label + ": byte " + std::to_string(sax.error_at) +
                     ": not valid JSON: " + sax.error);
  }
  return std::move(sax.root);
}

} // namespace faultline::alloc
