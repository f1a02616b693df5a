// The policy_chain fuzz entry (fuzz/policy_chain.cc), kept apart from entries.cc.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cincinnati::fuzz {

int PolicyChain(const uint8_t* data, size_t size);

}  // namespace cincinnati::fuzz
