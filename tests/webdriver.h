// A minimal W3C WebDriver client for tests: starts Debian's `chromedriver` on an
// ephemeral 127.0.0.1 port, opens one headless Chromium session (no network beyond
// 127.0.0.1, a throw-away profile) and speaks the protocol's JSON over our HTTP client.
// Every wait is bounded; failures are returned as messages, never thrown.
#pragma once

#include <simdjson.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "core/base64.h"
#include "core/json_writer.h"
#include "http/client.h"
#include "service_util.h"

namespace cincinnati::testing {

inline constexpr const char* kChromeDriver = "/usr/bin/chromedriver";
inline constexpr const char* kChromium = "/usr/bin/chromium";

class WebDriver {
 public:
  // Empty error(): a session is open.
  WebDriver() : port_(FreePort()), driver_({kChromeDriver, "--port=" + std::to_string(port_)}) {
    if (!WaitFor([&] { return Call("GET", "/status", "").find("\"ready\":true") != std::string::npos; })) {
      error_ = "chromedriver did not become ready: " + driver_.log();
      return;
    }
    const std::string profile = (driver_.dir() / "profile").string();
    const std::string args = R"(["--headless","--no-sandbox","--disable-gpu","--disable-dev-shm-usage",)"
                             R"("--disable-quic","--no-first-run","--disable-background-networking",)"
                             R"("--disable-component-update","--disable-sync","--window-size=1400,900",)"
                             R"("--user-data-dir=)" + profile + R"("])";
    std::string body = Call("POST", "/session",
                            R"({"capabilities":{"alwaysMatch":{"browserName":"chrome","goog:chromeOptions":{"binary":")" +
                                std::string(kChromium) + R"(","args":)" + args + "}}}}");
    auto id = Field(body, "sessionId");
    if (!id) {
      error_ = "no WebDriver session: " + body;
      return;
    }
    session_ = "/session/" + *id;
  }
  ~WebDriver() {
    if (!session_.empty()) Call("DELETE", session_, "");
  }

  const std::string& error() const { return error_; }

  std::string Navigate(const std::string& url) { return Call("POST", session_ + "/url", "{\"url\":" + JsonString(url) + "}"); }

  // Runs `script` (a function body) and returns the raw response's "value" as JSON text.
  std::string Execute(const std::string& script) {
    return Value(Call("POST", session_ + "/execute/sync", "{\"script\":" + JsonString(script) + ",\"args\":[]}"));
  }

  // The element's WebDriver id, or nothing.
  std::optional<std::string> Find(const std::string& using_, const std::string& selector) {
    std::string body = Call("POST", session_ + "/element",
                            "{\"using\":" + JsonString(using_) + ",\"value\":" + JsonString(selector) + "}");
    return Field(body, "element-6066-11e4-a52e-4f735466cecf");
  }

  // A real pointer click (the browser computes the element's centre); the response body.
  std::string Click(const std::string& element) {
    return Call("POST", session_ + "/element/" + element + "/click", "{}");
  }

  // Saves a PNG of the viewport; false with the response in `why` when it failed.
  bool Screenshot(const std::filesystem::path& file, std::string* why) {
    std::string body = Call("GET", session_ + "/screenshot", "");
    auto png = Field(body, "value");
    if (!png) {
      *why = body;
      return false;
    }
    auto decoded = Base64Decode(*png);
    if (!decoded.ok()) {
      *why = decoded.status().message();
      return false;
    }
    const std::string& bytes = *decoded;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << bytes;
    return bytes.rfind("\x89PNG", 0) == 0;
  }

  // Polls `script` (returning a boolean) for up to `limit`.
  bool WaitUntil(const std::string& script, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    return WaitFor([&] { return Execute(script) == "true"; }, limit);
  }

 private:
  std::string Call(const std::string& method, const std::string& path, const std::string& body) {
    http::RequestOptions options;
    options.method = method;
    options.body = body;
    options.headers = {"Content-Type: application/json"};
    options.timeout = std::chrono::seconds(60);
    return http::Request("http://127.0.0.1:" + std::to_string(port_) + path, options).body;
  }

  // The string member `name` of the response's "value" (or "value" itself), if any.
  static std::optional<std::string> Field(const std::string& body, const std::string& name) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.parse(body).get(doc)) return std::nullopt;
    simdjson::dom::element value;
    if (doc["value"].get(value)) return std::nullopt;
    std::string_view s;
    if (name == "value") return value.get(s) ? std::nullopt : std::optional<std::string>(std::string(s));
    if (value[name].get(s)) return std::nullopt;
    return std::string(s);
  }
  static std::string Value(const std::string& body) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    simdjson::dom::element value;
    if (parser.parse(body).get(doc) || doc["value"].get(value)) return body;
    return simdjson::minify(value);
  }

  int port_;
  ChildProcess driver_;
  std::string session_;
  std::string error_;
};

}  // namespace cincinnati::testing
