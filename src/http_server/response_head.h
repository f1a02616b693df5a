// AppendResponseHead: the bytes of an HTTP/1.x response head, written by hand so the
// server sends head and body in one system call without a serializer in between.
//
// Status line, then the response's headers in their map order and its preformatted
// head_lines (written as they are), Content-Length, and a
// Connection header where the version's default differs from `keep_alive` (close for
// 1.1, keep-alive for 1.0), as Beast writes them. Header names and values are written
// as given; a CR or LF in either is dropped, so no header can split the response.
// Pure; appends to `out`.
#pragma once

#include <cstddef>
#include <string>

#include "http_server/http_types.h"

namespace cincinnati::http_server {

void AppendResponseHead(std::string& out, const Response& response, unsigned version, size_t content_length,
                        bool keep_alive);

}  // namespace cincinnati::http_server
