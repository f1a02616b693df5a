// SignatureFiles: serves a directory of release signatures the way the reference's
// metadata-helper does, so that disconnected clusters can use the update service as
// their signature store (`spec.signatureStores`, or a release's `store-*` URL).
//
//   GET {prefix}/signatures/{ALGO}={DIGEST}/{SIGNATURE}  ->  <dir>/{ALGO}/{DIGEST}/{SIGNATURE}
//
// (the layout of a graph-data repository's `signatures/`, and of `cincinnati release
// sign --layout graph-data`). ALGO must be `sha` or `sha256` (else 400 invalid_params
// "algo not supported: X"); a segment without exactly one '=' is 400 invalid_params; a
// missing file is 404 does_not_exist ("signature <algo>=<digest>/<sig>"). Names made
// of anything but letters, digits, '.', '_' and '-' (or "..") never reach the disk.
//
// Thread-safety: Handle() may be called from any number of threads at once; files are
// read on each request, so new signatures are served without a restart.
#pragma once

#include <optional>
#include <string>

#include "http_server/http_types.h"
#include "http_server/metrics.h"
#include "service/http_names.h"

namespace cincinnati::server {

class SignatureFiles {
 public:
  SignatureFiles(std::string dir, std::string path_prefix);
  // nullopt when the request is not under {prefix}/signatures/.
  std::optional<Response> Handle(const Request& request, Family<Counter>& errors_total) const;

 private:
  std::string dir_, route_;
};

}  // namespace cincinnati::server
