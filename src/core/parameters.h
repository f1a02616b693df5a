// Parameters: named string values, ordered by name, looked up by any string type:
// a client's query parameters, and what graph transforms hand from step to step.
#pragma once

#include <functional>
#include <map>
#include <string>

namespace cincinnati {

// core/transform.h declares the same alias until its next change folds it into an
// include of this header (an alias may be declared twice for the same type).
using Parameters = std::map<std::string, std::string, std::less<>>;

}  // namespace cincinnati
