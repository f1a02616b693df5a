// The policy engine's OpenAPI 3 document ({prefix}/openapi): its two graph routes, the
// query parameters (the mandatory ones marked required on {prefix}/graph), and the
// Graph and Error schemas. Pure; built once per service.
#pragma once

#include <string>
#include <vector>

namespace cincinnati::server {

std::string OpenApiDocument(const std::string& prefix, const std::vector<std::string>& mandatory_parameters);

}  // namespace cincinnati::server
