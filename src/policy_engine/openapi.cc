#include "policy_engine/openapi.h"

#include <fmt/format.h>

#include "core/json_writer.h"

namespace cincinnati::server {

std::string OpenApiDocument(const std::string& prefix, const std::vector<std::string>& mandatory_parameters) {
  std::string mandatory;
  for (const std::string& key : mandatory_parameters) {
    mandatory += fmt::format(R"(,{{"in":"query","name":{},"required":true,"schema":{{"type":"string"}}}})",
                             JsonString(key));
  }
  constexpr const char* kParams =
      R"({"in":"query","name":"arch","required":false,"schema":{"type":"string","default":"amd64"},)"
      R"("description":"Architecture of the releases to return"},)"
      R"({"in":"query","name":"channel","required":false,"schema":{"type":"string"},"description":"Channel to return"},)"
      R"({"in":"query","name":"version","required":false,"schema":{"type":"string","pattern":"^[0-9]+\\.[0-9]+\\.[0-9]+$"},)"
      R"("description":"Version the client runs"},)"
      R"({"in":"query","name":"id","required":false,"schema":{"type":"string"},"description":"Cluster id"})";
  constexpr const char* kResponses =
      R"("responses":{"200":{"description":"The update graph","content":{"application/json":{"schema":)"
      R"({"$ref":"#/components/schemas/Graph"}},"application/vnd.redhat.cincinnati.v1+json":{"schema":)"
      R"({"$ref":"#/components/schemas/Graph"}}}},"400":{"description":"Missing or invalid parameters",)"
      R"("content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},)"
      R"("406":{"description":"Unacceptable Accept header","content":{"application/json":{"schema":)"
      R"({"$ref":"#/components/schemas/Error"}}}},"500":{"description":"Server error","content":)"
      R"({"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}},)"
      R"("default":{"description":"Error","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Error"}}}}})";
  constexpr const char* kComponents =
      R"("components":{"schemas":{"Graph":{"type":"object","required":["version","nodes","edges","conditionalEdges"],)"
      R"("properties":{"version":{"type":"integer"},"nodes":{"type":"array","items":{"$ref":"#/components/schemas/Node"}},)"
      R"("edges":{"type":"array","items":{"type":"array","items":{"type":"integer","minimum":0},"minItems":2,"maxItems":2}},)"
      R"("conditionalEdges":{"type":"array","items":{"$ref":"#/components/schemas/ConditionalEdge"}}}},)"
      R"("Node":{"type":"object","required":["version","payload","metadata"],"properties":{"version":{"type":"string"},)"
      R"("payload":{"type":"string"},"metadata":{"type":"object","additionalProperties":{"type":"string"}}}},)"
      R"("ConditionalEdge":{"type":"object","required":["edges","risks"],"properties":{"edges":{"type":"array",)"
      R"("items":{"type":"object","required":["from","to"],"properties":{"from":{"type":"string"},"to":{"type":"string"}}}},)"
      R"("risks":{"type":"array","items":{"$ref":"#/components/schemas/Risk"}}}},)"
      R"("Risk":{"type":"object","required":["url","name","message","matchingRules"],"properties":{"url":{"type":"string"},)"
      R"("name":{"type":"string"},"message":{"type":"string"},"matchingRules":{"type":"array","items":)"
      R"({"type":"object","required":["type"],"properties":{"type":{"type":"string","enum":["Always","PromQL"]},)"
      R"("promql":{"type":"object","properties":{"promql":{"type":"string"}}}}}}}},)"
      R"("Error":{"type":"object","required":["kind","value"],"properties":{"kind":{"type":"string"},"value":{"type":"string"}}}}})";
  auto path_item = [&](const std::string& extra) {
    return fmt::format(R"({{"get":{{"summary":"Update graph for a channel and architecture","parameters":[{}{}],{}}}}})",
                       kParams, extra, kResponses);
  };
  return fmt::format(R"({{"openapi":"3.0.3","info":{{"title":"Cincinnati Policy Engine","version":"v1"}},)"
                     R"("paths":{{{}:{},{}:{}}},{}}})",
                     JsonString(prefix + "/graph"), path_item(mandatory), JsonString(prefix + "/v1/graph"),
                     path_item(""), kComponents);
}

}  // namespace cincinnati::server
