// One gzip member inflated with zlib, for the properties of answers served compressed:
// nullopt when the input is not exactly one valid member.
#pragma once

#include <zlib.h>

#include <optional>
#include <string>

namespace cincinnati::fuzz {

inline std::optional<std::string> Gunzip(const std::string& data) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return std::nullopt;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  int rc = Z_OK;
  while (rc == Z_OK) {
    char buffer[16384];
    zs.next_out = reinterpret_cast<Bytef*>(buffer);
    zs.avail_out = sizeof buffer;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - zs.avail_out);
  }
  const bool whole = rc == Z_STREAM_END && zs.avail_in == 0;
  inflateEnd(&zs);
  if (!whole) return std::nullopt;
  return out;
}

}  // namespace cincinnati::fuzz
