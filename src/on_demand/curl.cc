// libcurl's functions the project calls, loaded on first use (env/shared_library.h).
// curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo take one argument after the
// option, whose type the option's number range says (curl/curl.h: long below 10000,
// an object or function pointer below 30000, curl_off_t below 40000, a blob's pointer
// above); it is read with that type and passed on.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include <cstdarg>

#include "on_demand/forward.h"

// The option before `...` is an enum, as in curl/curl.h's own declarations; its values
// are ints, which the default promotions leave as they are.
#pragma GCC diagnostic ignored "-Wvarargs"

namespace {
constinit cincinnati::env::SharedLibrary libcurl("libcurl.so.4", "libcurl4");

template <typename Code, typename Handle, typename Option>
Code CallWithOption(Code (*real)(Handle*, Option, ...), Handle* handle, Option option, va_list args) {
  const int number = static_cast<int>(option);
  if (number < CURLOPTTYPE_OBJECTPOINT) return real(handle, option, va_arg(args, long));
  if (number < CURLOPTTYPE_OFF_T) return real(handle, option, va_arg(args, void*));
  if (number < CURLOPTTYPE_BLOB) return real(handle, option, va_arg(args, curl_off_t));
  return real(handle, option, va_arg(args, void*));
}
}  // namespace

// Defines `name(Handle*, Option, ...)`, the argument after the option read by its type.
#define CINCINNATI_FORWARD_WITH_OPTION(Code, name, Handle, Option)                                \
  extern "C" Code name(Handle* handle, Option option, ...) {                                      \
    static const auto real = reinterpret_cast<decltype(&::name)>(libcurl.Require(#name));        \
    va_list args;                                                                                  \
    va_start(args, option);                                                                        \
    const Code code = CallWithOption(real, handle, option, args);                                  \
    va_end(args);                                                                                  \
    return code;                                                                                   \
  }

CINCINNATI_FORWARD_WITH_OPTION(CURLcode, curl_easy_setopt, CURL, CURLoption)
CINCINNATI_FORWARD_WITH_OPTION(CURLMcode, curl_multi_setopt, CURLM, CURLMoption)

// Every CURLINFO's argument is a pointer to where the value goes.
extern "C" CURLcode curl_easy_getinfo(CURL* handle, CURLINFO info, ...) {
  static const auto real = reinterpret_cast<decltype(&::curl_easy_getinfo)>(libcurl.Require("curl_easy_getinfo"));
  va_list args;
  va_start(args, info);
  const CURLcode code = real(handle, info, va_arg(args, void*));
  va_end(args);
  return code;
}

CINCINNATI_FORWARD(libcurl, CURLcode, curl_global_init, (long flags), (flags))
CINCINNATI_FORWARD(libcurl, CURL*, curl_easy_init, (void), ())
CINCINNATI_FORWARD(libcurl, void, curl_easy_cleanup, (CURL * handle), (handle))
CINCINNATI_FORWARD(libcurl, void, curl_easy_reset, (CURL * handle), (handle))
CINCINNATI_FORWARD(libcurl, CURLcode, curl_easy_perform, (CURL * handle), (handle))
CINCINNATI_FORWARD(libcurl, const char*, curl_easy_strerror, (CURLcode code), (code))
CINCINNATI_FORWARD(libcurl, void, curl_free, (void* p), (p))
CINCINNATI_FORWARD(libcurl, struct curl_slist*, curl_slist_append, (struct curl_slist * list, const char* item), (list, item))
CINCINNATI_FORWARD(libcurl, void, curl_slist_free_all, (struct curl_slist * list), (list))
CINCINNATI_FORWARD(libcurl, CURLM*, curl_multi_init, (void), ())
CINCINNATI_FORWARD(libcurl, CURLMcode, curl_multi_cleanup, (CURLM * multi), (multi))
CINCINNATI_FORWARD(libcurl, CURLMcode, curl_multi_add_handle, (CURLM * multi, CURL* handle), (multi, handle))
CINCINNATI_FORWARD(libcurl, CURLMcode, curl_multi_remove_handle, (CURLM * multi, CURL* handle), (multi, handle))
CINCINNATI_FORWARD(libcurl, CURLMsg*, curl_multi_info_read, (CURLM * multi, int* left), (multi, left))
CINCINNATI_FORWARD(libcurl, CURLMcode, curl_multi_perform, (CURLM * multi, int* running), (multi, running))
CINCINNATI_FORWARD(libcurl, CURLMcode, curl_multi_poll,
                   (CURLM * multi, struct curl_waitfd extra[], unsigned int extra_count, int timeout_ms, int* ready),
                   (multi, extra, extra_count, timeout_ms, ready))
CINCINNATI_FORWARD(libcurl, CURLMcode, curl_multi_wakeup, (CURLM * multi), (multi))
CINCINNATI_FORWARD(libcurl, CURLU*, curl_url, (void), ())
CINCINNATI_FORWARD(libcurl, void, curl_url_cleanup, (CURLU * url), (url))
CINCINNATI_FORWARD(libcurl, CURLUcode, curl_url_get, (CURLU * url, CURLUPart part, char** out, unsigned int flags),
                   (url, part, out, flags))
CINCINNATI_FORWARD(libcurl, CURLUcode, curl_url_set, (CURLU * url, CURLUPart part, const char* content, unsigned int flags),
                   (url, part, content, flags))
