// One libFuzzer target: CINCINNATI_FUZZ_ENTRY names the entry (see entries.h).
#include <cstring>

#include "entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const cincinnati::fuzz::Entry entry = [] {
    for (const auto& e : cincinnati::fuzz::Entries()) {
      if (std::strcmp(e.name, CINCINNATI_FUZZ_ENTRY) == 0) return e.entry;
    }
    __builtin_trap();
  }();
  return entry(data, size);
}
