#include "policy/channel_filter.h"

#include "policy/params.h"

namespace cincinnati::policy {

bool ListContains(std::string_view list, std::string_view item) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string_view entry = list.substr(start, comma == std::string_view::npos ? list.size() - start : comma - start);
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    if (entry == item) return true;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return false;
}

Result<Graph> ChannelFilter::ApplyTo(const Graph& graph, TransformContext& context) const {
  CINCINNATI_ASSIGN_OR_RETURN(std::string channel, RequiredParam(context.parameters, kChannelParam));
  CINCINNATI_RETURN_IF_ERROR(ValidateChannel(channel));
  return graph.Retain([&](NodeIndex i) {
    const Node& n = graph.node(i);
    if (!n.concrete) return false;
    auto it = n.metadata.find(key_);
    return it != n.metadata.end() && ListContains(it->second, channel);
  });
}

}  // namespace cincinnati::policy
