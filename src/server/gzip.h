// gzip compression (zlib) for precomputed response bodies.
#pragma once

#include <string>
#include <string_view>

namespace cincinnati::server {

std::string GzipCompress(std::string_view data, int level = 6);

}  // namespace cincinnati::server
