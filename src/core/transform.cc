#include "core/transform.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "core/guard.h"

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

Result<Graph> RunFrom(const TransformChain& chain, size_t first, Graph graph, TransformContext& context,
                      size_t last = SIZE_MAX) {
  for (size_t i = first; i < std::min(last, chain.size()); ++i) {
    auto next = Guarded(chain[i]->name(), [&] { return chain[i]->Apply(std::move(graph), context); });
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
  return RunStepsOn(chain, 0, chain.size(), graph, context);
}

Result<Graph> RunStepsOn(const TransformChain& chain, size_t first, size_t last, const Graph& graph,
                         TransformContext& context) {
  if (first >= last || first >= chain.size()) return graph;
  auto head = Guarded(chain[first]->name(), [&] { return chain[first]->ApplyTo(graph, context); });
  if (!head.ok()) return StepError(*chain[first], head.status());
  return RunFrom(chain, first + 1, std::move(head).value(), context, last);
}

StepReason GraphTransform::ExplainLoss(const StepLoss& loss) const {
  if (!loss.to) return {"removed_by_step", fmt::format("{} is removed by the policy step {}", loss.from_version, name())};
  return {"removed_by_step",
          fmt::format("{} -> {} is removed by the policy step {}", loss.from_version, loss.to_version, name())};
}

}  // namespace cincinnati
