// gzip compression (zlib) for precomputed response bodies.
#pragma once

#include <string>
#include <string_view>

namespace cincinnati::http_server {

std::string GzipCompress(std::string_view data, int level = 6);

}  // namespace cincinnati::http_server
