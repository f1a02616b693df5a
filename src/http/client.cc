#include "http/client.h"

#include <curl/curl.h>
#include <strings.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>

#include "core/strings.h"

namespace cincinnati::http {
namespace {

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  auto* headers = static_cast<Headers*>(user);
  if (line.substr(0, 5) == "HTTP/") {
    headers->clear();  // a new response (after a redirect or 100-continue)
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    headers->insert_or_assign(std::string(TrimWhitespace(line.substr(0, colon))),
                              std::string(TrimWhitespace(line.substr(colon + 1))));
  }
  return size * n;
}

// The system bundle plus the certificates under `dir`, read once per directory.
const std::string& CaBundle(const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::string> bundles;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, inserted] = bundles.emplace(dir, std::string());
  if (!inserted) return it->second;
  std::string& bundle = it->second;  // a lambda may not capture a structured binding (clang 14)
  auto append = [&](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    bundle.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    bundle += '\n';
  };
  append("/etc/ssl/certs/ca-certificates.crt");
  std::error_code ec;
  for (auto e = std::filesystem::recursive_directory_iterator(dir, ec); !ec && e != std::filesystem::recursive_directory_iterator();
       e.increment(ec)) {
    if (e.depth() > 1) {
      e.disable_recursion_pending();
      continue;
    }
    std::string ext = e->path().extension().string();
    if (e->is_regular_file() && (ext == ".pem" || ext == ".crt")) append(e->path());
  }
  return it->second;
}

}  // namespace

bool CaseInsensitiveLess::operator()(std::string_view a, std::string_view b) const {
  size_t n = std::min(a.size(), b.size());
  int c = ::strncasecmp(a.data(), b.data(), n);
  return c != 0 ? c < 0 : a.size() < b.size();
}

const std::string* Result::Header(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? nullptr : &it->second;
}

Result Request(const std::string& url, const RequestOptions& options) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  Result result;
  CURL* curl = curl_easy_init();
  if (!curl) {
    result.error = "curl_easy_init failed";
    return result;
  }
  curl_slist* headers = nullptr;
  for (const std::string& h : options.headers) headers = curl_slist_append(headers, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &result.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &result.headers);
  if (options.accept_gzip) curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "gzip");
  curl_blob ca{};
  if (!options.ca_path.empty()) {
    const std::string& bundle = CaBundle(options.ca_path);
    ca.data = const_cast<char*>(bundle.data());
    ca.len = bundle.size();
    ca.flags = CURL_BLOB_NOCOPY;
    curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
  }
  if (options.head || options.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (options.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, options.method.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, options.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(options.body.size()));
  }
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    result.error = std::string("error sending request for url (") + url + "): " +
                   (error[0] ? error : curl_easy_strerror(rc));
  } else {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return result;
}

Result Get(const std::string& url, const GetOptions& options) {
  return Request(url, {.headers = options.headers, .timeout = options.timeout, .accept_gzip = options.accept_gzip});
}

}  // namespace cincinnati::http
