// Small string helpers: the comma-separated lists that metadata values hold, and UTF-8
// checks for text that reaches clients.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cincinnati {

// Removes leading and trailing spaces, tabs, CR and LF.
std::string_view TrimWhitespace(std::string_view s);

// Splits on `separator`, keeping empty items ("a,,b" has three items).
std::vector<std::string_view> Split(std::string_view s, char separator);

// Whether a comma-separated list contains `item` once each entry is trimmed.
bool ListContains(std::string_view list, std::string_view item);

// `message` with every run of digits replaced by '#': two failures with the same cause
// but different timings or counts ("timed out after 1001 ms") compare equal, so a
// repeating failure is logged once.
std::string FailureCause(std::string_view message);

// Whether `text` is well-formed UTF-8 (no overlongs, surrogates, code points past
// U+10FFFF or truncated sequences).
bool IsValidUtf8(std::string_view text);

// `text` for a message that quotes it: line breaks, tabs and other control characters
// written as escapes (\n, \t, \x01), so that a quoted value stays on one line.
std::string Printable(std::string_view text);

// `text` cut to at most `max_bytes` (at a UTF-8 character boundary) with a note of its
// full size: messages that quote untrusted input stay small.
std::string Abbreviate(std::string_view text, size_t max_bytes);

// `text` with each maximal ill-formed subsequence replaced by U+FFFD, as Rust's
// String::from_utf8_lossy does (the reference decodes query strings this way).
std::string ToValidUtf8(std::string_view text);
// The same in place; a no-op (no copy) for text that is already valid.
void MakeValidUtf8(std::string& text);

}  // namespace cincinnati
