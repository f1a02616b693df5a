#include "http/long_polls.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <condition_variable>
#include <algorithm>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "core/strings.h"
#include "env/clock.h"
#include "http/transfer.h"

namespace cincinnati::http {
namespace {

// One poll and what curl points into while it runs.
struct Transfer {
  LongPolls::Poll poll;
  std::function<void(Result)> done;
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  curl_blob ca{};
  char error[CURL_ERROR_SIZE] = {0};
  size_t limit = 0;
  bool exceeded = false;
  Result result;
  ~Transfer() {
    if (curl) curl_easy_cleanup(curl);
    curl_slist_free_all(headers);
  }
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  if (bytes > t->limit - std::min(t->limit, t->result.body.size())) {
    t->exceeded = true;
    return 0;  // curl aborts the transfer
  }
  t->result.body.append(data, bytes);
  return bytes;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  auto* headers = &static_cast<Transfer*>(user)->result.headers;
  if (line.substr(0, 5) == "HTTP/") {
    headers->clear();
  } else if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    headers->insert_or_assign(std::string(TrimWhitespace(line.substr(0, colon))), std::string(TrimWhitespace(line.substr(colon + 1))));
  }
  return size * n;
}

bool Configure(Transfer& t) {
  t.curl = curl_easy_init();
  if (!t.curl) return false;
  for (const std::string& h : t.poll.headers) t.headers = curl_slist_append(t.headers, h.c_str());
  CURL* c = t.curl;
  curl_easy_setopt(c, CURLOPT_URL, t.poll.url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, t.headers);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<int64_t>(1, t.poll.timeout.count())));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, t.error);
  curl_easy_setopt(c, CURLOPT_PRIVATE, &t);
  if (!t.poll.ca_path.empty()) {
    const std::string& bundle = internal::CaBundleFor(t.poll.ca_path);
    t.ca.data = const_cast<char*>(bundle.data());
    t.ca.len = bundle.size();
    t.ca.flags = CURL_BLOB_NOCOPY;
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &t.ca);
  }
  return true;
}

void Finish(Transfer& t, CURLcode rc) {
  Result& out = t.result;
  out.url = t.poll.url;
  if (t.exceeded) {
    out.error_kind = ErrorKind::kBodyTooLarge;
    out.error = fmt::format("response body of url ({}) exceeds {} bytes", t.poll.url, t.limit);
  } else if (rc != CURLE_OK) {
    out.error_kind = ErrorKind::kTransport;
    out.error = fmt::format("error sending request for url ({}): {}", t.poll.url, t.error[0] ? t.error : curl_easy_strerror(rc));
  } else {
    curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &out.status);
  }
}

}  // namespace

struct LongPolls::Impl {
  explicit Impl(size_t limit) : max_body_bytes(limit) {
    static std::once_flag init;
    std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    multi = curl_multi_init();
    thread = std::thread([this] { Loop(); });
  }
  ~Impl() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    idle.notify_all();
    if (multi) curl_multi_wakeup(multi);
    thread.join();
    if (multi) curl_multi_cleanup(multi);
  }

  void Loop();
  // Sends the polls whose delay is over (all, as cancelled, when stopping).
  void StartDue(std::list<std::unique_ptr<Transfer>> added, bool stop, std::list<std::unique_ptr<Transfer>>& ended);
  void CancelActive(std::list<std::unique_ptr<Transfer>>& ended);
  void CollectFinished(std::list<std::unique_ptr<Transfer>>& ended);
  void WaitForWork();  // until a transfer moves, a poll is added or the next delay ends

  const size_t max_body_bytes;
  CURLM* multi = nullptr;
  mutable std::mutex mu;
  std::condition_variable idle;                   // without a multi handle only
  std::list<std::unique_ptr<Transfer>> incoming;  // started, not yet added (under mu)
  // Started with a delay, by the time they are sent (the polling thread's only).
  std::multimap<std::chrono::steady_clock::time_point, std::unique_ptr<Transfer>> delayed;
  std::list<std::unique_ptr<Transfer>> active;    // the polling thread's only
  size_t running = 0;                             // under mu
  bool stopping = false;                          // under mu
  std::thread thread;
};

void LongPolls::Impl::Loop() {
  for (;;) {
    std::list<std::unique_ptr<Transfer>> added, ended;
    bool stop;
    {
      std::lock_guard lock(mu);
      added.splice(added.end(), incoming);
      stop = stopping;
    }
    StartDue(std::move(added), stop, ended);
    if (stop) {
      CancelActive(ended);
    } else if (multi) {
      CollectFinished(ended);
    }
    {
      std::lock_guard lock(mu);
      running -= ended.size();
    }
    for (auto& t : ended) {
      try {
        t->done(std::move(t->result));
      } catch (...) {
        // `done` must not throw; one that does loses only its own poll.
      }
    }
    if (stop) return;
    WaitForWork();
  }
}

void LongPolls::Impl::StartDue(std::list<std::unique_ptr<Transfer>> added, bool stop, std::list<std::unique_ptr<Transfer>>& ended) {
  const auto now = env::RealClock().Steady();
  for (auto& t : added) {
    if (t && t->poll.delay.count() > 0 && !stop) delayed.emplace(now + t->poll.delay, std::move(t));
  }
  added.remove(nullptr);
  while (!delayed.empty() && (stop || delayed.begin()->first <= now)) {
    added.push_back(std::move(delayed.begin()->second));
    delayed.erase(delayed.begin());
  }
  for (auto& t : added) {
    if (stop) {  // never sent
      t->result.error_kind = ErrorKind::kCancelled;
      t->result.error = fmt::format("request for url ({}) cancelled", t->poll.url);
      ended.push_back(std::move(t));
      continue;
    }
    if (!multi || !Configure(*t)) {
      t->result.error_kind = ErrorKind::kTransport;
      t->result.error = fmt::format("cannot start a request for url ({})", t->poll.url);
      ended.push_back(std::move(t));
      continue;
    }
    curl_multi_add_handle(multi, t->curl);
    active.push_back(std::move(t));
  }
}

void LongPolls::Impl::CancelActive(std::list<std::unique_ptr<Transfer>>& ended) {
  for (auto& t : active) {
    curl_multi_remove_handle(multi, t->curl);
    t->result.error_kind = ErrorKind::kCancelled;
    t->result.error = fmt::format("request for url ({}) cancelled", t->poll.url);
    ended.push_back(std::move(t));
  }
  active.clear();
}

void LongPolls::Impl::CollectFinished(std::list<std::unique_ptr<Transfer>>& ended) {
  int still = 0;
  curl_multi_perform(multi, &still);
  int queued = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
    if (msg->msg != CURLMSG_DONE) continue;
    Transfer* done = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &done);
    const CURLcode rc = msg->data.result;
    curl_multi_remove_handle(multi, msg->easy_handle);
    for (auto it = active.begin(); it != active.end(); ++it) {
      if (it->get() != done) continue;
      Finish(**it, rc);
      ended.push_back(std::move(*it));
      active.erase(it);
      break;
    }
  }
}

void LongPolls::Impl::WaitForWork() {
  if (multi) {
    int wait_ms = 1000;
    if (!delayed.empty()) {
      const auto until = std::chrono::ceil<std::chrono::milliseconds>(delayed.begin()->first - env::RealClock().Steady());
      wait_ms = static_cast<int>(std::clamp<int64_t>(until.count(), 0, wait_ms));
    }
    curl_multi_poll(multi, nullptr, 0, wait_ms, nullptr);
    return;
  }
  // No multi handle: every poll fails at once; wait for the next one.
  std::unique_lock lock(mu);
  auto woken = [&] { return stopping || !incoming.empty(); };
  if (delayed.empty()) {
    idle.wait(lock, woken);
  } else {
    idle.wait_until(lock, delayed.begin()->first, woken);
  }
}

LongPolls::LongPolls(size_t max_body_bytes) : impl_(std::make_unique<Impl>(max_body_bytes)) {}

LongPolls::~LongPolls() = default;

void LongPolls::Start(Poll poll, std::function<void(Result)> done) {
  auto t = std::make_unique<Transfer>();
  t->poll = std::move(poll);
  t->done = std::move(done);
  t->limit = impl_->max_body_bytes;
  {
    std::lock_guard lock(impl_->mu);
    if (!impl_->stopping) {
      ++impl_->running;
      impl_->incoming.push_back(std::move(t));
    }
  }
  if (t) {  // stopping: never started
    Result cancelled;
    cancelled.url = t->poll.url;
    cancelled.error_kind = ErrorKind::kCancelled;
    cancelled.error = fmt::format("request for url ({}) cancelled", t->poll.url);
    t->done(std::move(cancelled));
    return;
  }
  impl_->idle.notify_all();
  if (impl_->multi) curl_multi_wakeup(impl_->multi);
}

size_t LongPolls::running() const {
  std::lock_guard lock(impl_->mu);
  return impl_->running;
}

}  // namespace cincinnati::http
