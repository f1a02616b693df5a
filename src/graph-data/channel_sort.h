// The reference's ordering of a node's channel list: sort the comma-separated names
// by byte order, then stable-sort by the text after the first '-', which groups them
// by version stream: "candidate-4.2,fast-4.2,stable-4.2,candidate-4.3". A name
// without '-' has an empty stream and sorts first.
#pragma once

#include <string>
#include <string_view>

namespace cincinnati::graphdata {

std::string SortChannelList(std::string_view comma_separated);

}  // namespace cincinnati::graphdata
