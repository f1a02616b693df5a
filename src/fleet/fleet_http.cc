#include "fleet/fleet_http.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <zlib.h>

#include <cstring>

#include "core/strings.h"

namespace cincinnati::fleet {

struct FleetHttp::Slot {
  CURL* easy = nullptr;
  FleetHttp* owner = nullptr;
  size_t index = 0, lane = 0;
  FleetRequest request;
  FleetResponse response;
  curl_slist* extra = nullptr;  // headers of this request only (If-None-Match)
  bool too_large = false;
  std::chrono::steady_clock::time_point submitted;
};

namespace {

bool StartsWithNoCase(std::string_view line, std::string_view prefix) {
  if (line.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != prefix[i]) return false;
  }
  return true;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* slot = static_cast<FleetHttp::Slot*>(user);
  const std::string_view line(data, size * n);
  FleetResponse& r = slot->response;
  if (line.starts_with("HTTP/")) {  // a new response (after a 100 Continue, say)
    r.etag.clear();
    r.poll_receipt.clear();
    r.gzip = r.body_skipped = false;
    const size_t sp = line.find(' ');
    r.status = sp == std::string_view::npos ? 0 : std::strtol(std::string(line.substr(sp + 1, 3)).c_str(), nullptr, 10);
  } else if (StartsWithNoCase(line, "etag:")) {
    r.etag = std::string(TrimWhitespace(line.substr(5)));
  } else if (StartsWithNoCase(line, "cincinnati-poll-receipt:")) {
    r.poll_receipt = std::string(TrimWhitespace(line.substr(24)));
  } else if (StartsWithNoCase(line, "content-encoding:")) {
    r.gzip = TrimWhitespace(line.substr(17)) == "gzip";
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* slot = static_cast<FleetHttp::Slot*>(user);
  FleetResponse& r = slot->response;
  if (r.body.empty() && !r.body_skipped && r.status == 200 && !r.etag.empty() && slot->request.may_skip_body) {
    r.body_skipped = slot->owner->SkipBody(r.etag);
  }
  if (r.body_skipped) return size * n;
  if (r.body.size() + size * n > slot->owner->max_body()) {
    slot->too_large = true;
    return 0;  // ends the transfer with CURLE_WRITE_ERROR
  }
  r.body.append(data, size * n);
  return size * n;
}

}  // namespace

std::string QueryEscape(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

Result<std::string> Inflate(std::string_view gzip, size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return Status::Internal("inflateInit2 failed");
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gzip.data()));
  z.avail_in = static_cast<uInt>(gzip.size());
  int rc = Z_OK;
  char buffer[65536];
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof(buffer);
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buffer, sizeof(buffer) - z.avail_out);
    if (out.size() > max_bytes) rc = Z_MEM_ERROR;
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) break;  // truncated input
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return Status::InvalidArgument(fmt::format("gzip body does not inflate (zlib {})", rc));
  return out;
}

FleetHttp::FleetHttp(std::vector<int> lanes, std::function<bool(std::string_view)> skip_body, std::chrono::milliseconds timeout,
                     size_t max_body_bytes)
    : multi_(curl_multi_init()), skip_body_(std::move(skip_body)), timeout_(timeout), max_body_(max_body_bytes) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  int parallel = 0;
  for (int n : lanes) parallel += n;
  free_.resize(lanes.size());
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(parallel));
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(parallel));
  auto list = [](std::initializer_list<const char*> lines) {
    curl_slist* l = nullptr;
    for (const char* line : lines) l = curl_slist_append(l, line);
    return l;
  };
  get_headers_ = list({"Accept: application/json", "Accept-Encoding: gzip"});
  get_plain_headers_ = list({"Accept: application/json"});
  post_headers_ = list({"Content-Type: application/json", "Accept: application/json", "Expect:"});
  for (int i = 0; i < parallel; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->easy = curl_easy_init();
    slot->owner = this;
    slot->index = static_cast<size_t>(i);
    curl_easy_setopt(slot->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(slot->easy, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(slot->easy, CURLOPT_HEADERDATA, slot.get());
    curl_easy_setopt(slot->easy, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(slot->easy, CURLOPT_WRITEDATA, slot.get());
    curl_easy_setopt(slot->easy, CURLOPT_PRIVATE, slot.get());
    curl_easy_setopt(slot->easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_.count()));
    curl_easy_setopt(slot->easy, CURLOPT_TCP_NODELAY, 1L);
    slots_.push_back(std::move(slot));
  }
  size_t next = 0;
  for (size_t lane = 0; lane < lanes.size(); ++lane) {
    for (int i = 0; i < lanes[lane]; ++i, ++next) {
      slots_[next]->lane = lane;
      free_[lane].push_back(next);
    }
  }
}

FleetHttp::~FleetHttp() {
  for (auto& slot : slots_) {
    curl_multi_remove_handle(multi_, slot->easy);
    curl_easy_cleanup(slot->easy);
    curl_slist_free_all(slot->extra);
  }
  curl_multi_cleanup(multi_);
  curl_slist_free_all(static_cast<curl_slist*>(get_headers_));
  curl_slist_free_all(static_cast<curl_slist*>(get_plain_headers_));
  curl_slist_free_all(static_cast<curl_slist*>(post_headers_));
}

bool FleetHttp::Full(size_t lane) const { return free_[lane].empty(); }

size_t FleetHttp::in_flight() const {
  size_t idle = 0;
  for (const auto& lane : free_) idle += lane.size();
  return slots_.size() - idle;
}
bool FleetHttp::SkipBody(std::string_view etag) const { return skip_body_ && skip_body_(etag); }

void FleetHttp::Submit(FleetRequest request, size_t lane) {
  Slot& slot = *slots_[free_[lane].back()];
  free_[lane].pop_back();
  slot.request = std::move(request);
  slot.response = FleetResponse{};
  slot.response.tag = slot.request.tag;
  slot.too_large = false;
  slot.submitted = std::chrono::steady_clock::now();
  curl_slist_free_all(slot.extra);
  slot.extra = nullptr;
  CURL* easy = slot.easy;
  curl_easy_setopt(easy, CURLOPT_URL, slot.request.url.c_str());
  const bool post = !slot.request.body.empty();
  void* headers = post ? post_headers_ : slot.request.gzip ? get_headers_ : get_plain_headers_;
  if (!slot.request.if_none_match.empty() || slot.request.poll_receipt) {
    for (curl_slist* l = static_cast<curl_slist*>(headers); l; l = l->next) slot.extra = curl_slist_append(slot.extra, l->data);
    if (!slot.request.if_none_match.empty()) {
      slot.extra = curl_slist_append(slot.extra, ("If-None-Match: " + slot.request.if_none_match).c_str());
    }
    if (const auto& receipt = slot.request.poll_receipt) {
      // libcurl drops "Name:" with nothing after it; "Name;" sends it empty.
      const std::string line = receipt->empty() ? "Cincinnati-Poll-Receipt;" : "Cincinnati-Poll-Receipt: " + *receipt;
      slot.extra = curl_slist_append(slot.extra, line.c_str());
    }
    headers = slot.extra;
  }
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, static_cast<curl_slist*>(headers));
  if (post) {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, slot.request.body.c_str());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, static_cast<long>(slot.request.body.size()));
  } else {
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
  }
  curl_multi_add_handle(multi_, easy);
}

void FleetHttp::Finish(Slot& slot, int curl_code, std::vector<FleetResponse>& done) {
  curl_multi_remove_handle(multi_, slot.easy);
  long connects = 0;
  curl_easy_getinfo(slot.easy, CURLINFO_NUM_CONNECTS, &connects);
  connections_ += static_cast<uint64_t>(connects);
  FleetResponse& r = slot.response;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - slot.submitted).count();
  if (curl_code != CURLE_OK) {
    r.error = slot.too_large ? fmt::format("{}: the body is over {} bytes", slot.request.url, max_body_)
                             : fmt::format("{}: {}", slot.request.url, curl_easy_strerror(static_cast<CURLcode>(curl_code)));
    r.status = 0;
  } else {
    curl_easy_getinfo(slot.easy, CURLINFO_RESPONSE_CODE, &r.status);
  }
  done.push_back(std::move(r));
  slot.request.body.clear();
  free_[slot.lane].push_back(slot.index);
}

void FleetHttp::Run(std::chrono::milliseconds wait, std::vector<FleetResponse>& done) {
  auto* multi = static_cast<CURLM*>(multi_);
  int running = 0;
  const size_t before = done.size();
  for (int round = 0; round < 2; ++round) {
    curl_multi_perform(multi, &running);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Slot* slot = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &slot);
      Finish(*slot, msg->data.result, done);
    }
    if (done.size() > before || round == 1) break;
    curl_multi_poll(multi, nullptr, 0, static_cast<int>(std::max<int64_t>(0, wait.count())), nullptr);
  }
}

}  // namespace cincinnati::fleet
