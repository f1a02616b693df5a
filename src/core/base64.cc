#include "core/base64.h"

#include <openssl/evp.h>

namespace cincinnati {

std::string Base64Encode(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> Base64Decode(std::string_view in) {
  std::string out(3 * in.size() / 4 + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return Status::InvalidArgument("not base64");
  // EVP_DecodeBlock counts padding as output bytes; a well-formed input has at most
  // two '=' and they never outnumber what was decoded ("====" decodes to 3 bytes).
  size_t pad = 0;
  for (size_t i = in.size(); i > 0 && in[i - 1] == '='; --i) ++pad;
  if (pad > 2 || pad > static_cast<size_t>(n)) return Status::InvalidArgument("not base64");
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

}  // namespace cincinnati
