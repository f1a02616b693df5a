#include "core/transform.h"

namespace cincinnati {

namespace {

Status StepError(const GraphTransform& step, const Status& status) {
  // Client-facing kinds keep their message unprefixed (it becomes the error body).
  Status::Code code = status.code();
  if (code == Status::Code::kMissingParams || code == Status::Code::kInvalidParams ||
      code == Status::Code::kArchVersion) {
    return status;
  }
  return status.WithContext(step.name());
}

Result<Graph> RunFrom(const TransformChain& chain, size_t first, Graph graph, TransformContext& context) {
  for (size_t i = first; i < chain.size(); ++i) {
    auto next = chain[i]->Apply(std::move(graph), context);
    if (!next.ok()) return StepError(*chain[i], next.status());
    graph = std::move(next).value();
  }
  return graph;
}

}  // namespace

Result<Graph> RunChain(const TransformChain& chain, Graph graph, TransformContext& context) {
  return RunFrom(chain, 0, std::move(graph), context);
}

Result<Graph> RunChainOn(const TransformChain& chain, const Graph& graph, TransformContext& context) {
  if (chain.empty()) return graph;
  auto first = chain[0]->ApplyTo(graph, context);
  if (!first.ok()) return StepError(*chain[0], first.status());
  return RunFrom(chain, 1, std::move(first).value(), context);
}

}  // namespace cincinnati
