#include "graph-data/channel_sort.h"

#include "core/strings.h"

#include <algorithm>
#include <vector>

namespace cincinnati::graphdata {

std::string SortChannelList(std::string_view list) {
  std::vector<std::string_view> names = Split(list, ',');
  auto stream = [](std::string_view name) {
    size_t dash = name.find('-');
    return dash == std::string_view::npos ? std::string_view() : name.substr(dash + 1);
  };
  std::sort(names.begin(), names.end());
  std::stable_sort(names.begin(), names.end(),
                   [&](std::string_view a, std::string_view b) { return stream(a) < stream(b); });
  std::string out;
  out.reserve(list.size());
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ',';
    out += names[i];
  }
  return out;
}

}  // namespace cincinnati::graphdata
