#include "http_server/http_types.h"

#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

namespace cincinnati::http_server {

const std::string* Request::Header(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? nullptr : &it->second;
}

std::shared_ptr<const FileBody> FileBody::From(const std::string& bytes) {
  int fd = ::memfd_create("cincinnati-body", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      ::close(fd);
      return nullptr;
    }
    done += static_cast<size_t>(n);
  }
  return std::shared_ptr<const FileBody>(new FileBody(fd, bytes.size()));
}

FileBody::~FileBody() { ::close(fd_); }

Response Response::Text(int status, std::string body, std::string content_type) {
  Response r;
  r.status = status;
  r.headers["Content-Type"] = std::move(content_type);
  r.body = std::make_shared<const std::string>(std::move(body));
  return r;
}

Response Response::Empty(int status) {
  Response r;
  r.status = status;
  return r;
}

}  // namespace cincinnati::http_server
