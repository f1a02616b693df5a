#include "core/transform.h"

namespace cincinnati {

Result<Graph> RunChain(const TransformChain& chain, Graph graph, TransformContext& context) {
  for (const auto& step : chain) {
    auto next = step->Apply(std::move(graph), context);
    if (!next.ok()) {
      // Client-facing kinds keep their message unprefixed (it becomes the error body).
      Status::Code code = next.status().code();
      if (code == Status::Code::kMissingParams || code == Status::Code::kInvalidParams ||
          code == Status::Code::kArchVersion) {
        return next.status();
      }
      return next.status().WithContext(step->name());
    }
    graph = std::move(next).value();
  }
  return graph;
}

}  // namespace cincinnati
