// SHA-256 of a byte string as lowercase hex (release digests, ETags).
#pragma once

#include <string>
#include <string_view>

namespace cincinnati {

std::string Sha256Hex(std::string_view data);

}  // namespace cincinnati
