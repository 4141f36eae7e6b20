// The byte layer under read_history (history.h): reading a file whole or its head, zstd, and
// JSON without "frames". Each throws TraceError naming the file and where in it.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace faultline::alloc {

// The file's first `limit` bytes (all of it if shorter).
std::string read_file_head(const std::string& path, size_t limit);

// Whether `bytes` start with a zstd frame's magic number.
bool is_zstd(std::string_view bytes);

// Up to `want` bytes from the start of a zstd stream's content; fewer where they cannot be had
// (the full decompression then says why).
std::string zstd_head(std::string_view compressed, size_t want);

// The whole stream's content; a defect names its byte in the compressed file.
std::string zstd_decompress(std::string_view compressed, const std::string& path);

// The document as nlohmann's parser builds it, but without the values of "frames" keys: stack
// frames are most of a snapshot's bytes and no part of its allocation history. A syntax error
// names its byte.
nlohmann::json parse_json_without_frames(const std::string& text, const std::string& label);

} // namespace faultline::alloc
