#include "http/transfer.h"

#include <curl/curl.h>

#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "core/strings.h"
#include "env/file_system.h"

namespace cincinnati::http::internal {
namespace {

struct BodySink {
  std::string* body;
  size_t limit;
  bool exceeded = false;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  size_t bytes = size * n;
  if (bytes > sink->limit - std::min(sink->limit, sink->body->size())) {
    sink->exceeded = true;
    return 0;  // not `bytes`: curl aborts the transfer
  }
  sink->body->append(data, bytes);
  return bytes;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  auto* headers = static_cast<Headers*>(user);
  if (line.substr(0, 5) == "HTTP/") {
    headers->clear();  // a new response (after a 100-continue)
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    headers->insert_or_assign(std::string(TrimWhitespace(line.substr(0, colon))),
                              std::string(TrimWhitespace(line.substr(colon + 1))));
  }
  return size * n;
}

// curl calls this at least once a second, also while waiting for data.
int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::stop_token*>(user)->stop_requested() ? 1 : 0;
}

// A CA file larger than this is not certificates.
constexpr size_t kMaxCaFileBytes = size_t{64} << 20;

// The system bundle plus the certificates under `dir`, read once per directory.
const std::string& CaBundle(const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::string> bundles;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, inserted] = bundles.emplace(dir, std::string());
  if (!inserted) return it->second;
  std::string& bundle = it->second;  // a lambda may not capture a structured binding (clang 14)
  env::FileSystem& fs = env::DefaultFileSystem();
  auto append = [&](const std::filesystem::path& p) {
    auto text = fs.ReadFile(p, kMaxCaFileBytes);  // unreadable: nothing of it
    if (text.ok()) bundle += *text;
    bundle += '\n';
  };
  append("/etc/ssl/certs/ca-certificates.crt");
  // The certificates in `dir` and in its subdirectories, one level down (not through a
  // symlinked directory); a symlink loop or a file gone meanwhile is skipped.
  std::function<void(const std::filesystem::path&, int)> add = [&](const std::filesystem::path& d, int depth) {
    auto entries = fs.ListDirectory(d);
    if (!entries.ok()) return;
    for (const env::DirectoryEntry& e : *entries) {
      std::string ext = e.path.extension().string();
      if (e.type == env::FileType::kRegular && (ext == ".pem" || ext == ".crt")) append(e.path);
      if (depth == 0 && e.type == env::FileType::kDirectory && !e.is_symlink) add(e.path, 1);
    }
  };
  if (!dir.empty()) add(dir, 0);
  return it->second;
}

// The thread's curl handle: curl keeps its connection cache per handle, so keeping one
// per thread reuses connections without sharing anything between threads.
struct ThreadHandle {
  CURL* curl = nullptr;
  bool busy = false;
  ~ThreadHandle() {
    if (curl) curl_easy_cleanup(curl);
  }
};

// Borrows the thread's handle, or a fresh one should a request ever run while the
// thread's handle is in use (a nested call); options are reset when it is returned.
class HandleLease {
 public:
  HandleLease() {
    static std::once_flag init;
    std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    thread_local ThreadHandle thread_handle;
    if (!thread_handle.busy) {
      if (!thread_handle.curl) thread_handle.curl = curl_easy_init();
      thread_handle.busy = thread_handle.curl != nullptr;
      owner_ = &thread_handle;
      curl_ = thread_handle.curl;
    } else {
      curl_ = curl_easy_init();
    }
  }
  ~HandleLease() {
    if (!curl_) return;
    curl_easy_reset(curl_);  // drops pointers into this request's buffers; keeps connections
    if (owner_) {
      owner_->busy = false;
    } else {
      curl_easy_cleanup(curl_);
    }
  }
  HandleLease(const HandleLease&) = delete;
  HandleLease& operator=(const HandleLease&) = delete;
  CURL* get() const { return curl_; }

 private:
  CURL* curl_ = nullptr;
  ThreadHandle* owner_ = nullptr;
};

void SetBody(CURL* curl, const Hop& hop) {
  if (hop.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (hop.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, hop.method.c_str());
    static const std::string kEmpty;
    const std::string& body = hop.body ? *hop.body : kEmpty;
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
}

void Fail(HopResult& out, ErrorKind kind, std::string message) {
  out.error_kind = kind;
  out.error = std::move(message);
}

// What curl points into while a hop runs; it outlives the transfer.
struct HopBuffers {
  explicit HopBuffers(HopResult& out, size_t limit) : sink{&out.body, limit} {}
  ~HopBuffers() { curl_slist_free_all(headers); }
  curl_slist* headers = nullptr;
  BodySink sink;
  curl_blob ca{};
  char error[CURL_ERROR_SIZE] = {0};
};

void Configure(CURL* curl, const Hop& hop, const RequestOptions& options, HopBuffers& buffers, HopResult& out) {
  for (const std::string& h : hop.headers) buffers.headers = curl_slist_append(buffers.headers, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, hop.url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, buffers.headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<int64_t>(1, hop.timeout.count())));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  // A connection idle longer may have been dropped by a load balancer or NAT unnoticed.
  curl_easy_setopt(curl, CURLOPT_MAXAGE_CONN, 30L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &buffers.sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &out.headers);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, buffers.error);
  if (options.stop.stop_possible()) {
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &options.stop);
  }
  if (options.accept_gzip) curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "gzip");
  if (!options.ca_path.empty()) {
    const std::string& bundle = CaBundle(options.ca_path);
    buffers.ca.data = const_cast<char*>(bundle.data());
    buffers.ca.len = bundle.size();
    buffers.ca.flags = CURL_BLOB_NOCOPY;
    curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &buffers.ca);
  }
  SetBody(curl, hop);
}

}  // namespace

const std::string& CaBundleFor(const std::string& dir) { return CaBundle(dir); }

HopResult PerformHop(const Hop& hop, const RequestOptions& options) {
  HopResult out;
  HandleLease lease;  // declared before the buffers: reset after they are gone, never used in between
  CURL* curl = lease.get();
  if (!curl) {
    Fail(out, ErrorKind::kTransport, "curl_easy_init failed");
    return out;
  }
  HopBuffers buffers(out, options.max_body_bytes);
  Configure(curl, hop, options, buffers, out);
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &out.new_connections);
  if (buffers.sink.exceeded) {
    Fail(out, ErrorKind::kBodyTooLarge,
         fmt::format("response body of url ({}) exceeds {} bytes ({})", hop.url, options.max_body_bytes,
                     options.max_body_name));
  } else if (rc == CURLE_ABORTED_BY_CALLBACK) {
    Fail(out, ErrorKind::kCancelled, fmt::format("request for url ({}) cancelled", hop.url));
  } else if (rc != CURLE_OK) {
    Fail(out, ErrorKind::kTransport, fmt::format("error sending request for url ({}): {}", hop.url,
                                                 buffers.error[0] ? buffers.error : curl_easy_strerror(rc)));
  } else {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out.status);
    char* location = nullptr;
    if (curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location) out.redirect_url = location;
  }
  return out;
}

}  // namespace cincinnati::http::internal
