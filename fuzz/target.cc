// One libFuzzer target: CINCINNATI_FUZZ_ENTRY names the entry (see entries.h).
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "entries.h"

// Counted allocations, for the entries that state a memory bound (entries.cc): every
// operator new goes through here (libstdc++'s array, nothrow and sized forms call these).
namespace {
std::atomic<size_t> live_bytes{0}, peak_bytes{0};
}

void* operator new(size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  const size_t now = live_bytes.fetch_add(malloc_usable_size(p)) + malloc_usable_size(p);
  for (size_t peak = peak_bytes.load(); now > peak && !peak_bytes.compare_exchange_weak(peak, now);) {
  }
  return p;
}

void operator delete(void* p) noexcept {
  if (!p) return;
  live_bytes.fetch_sub(malloc_usable_size(p));
  std::free(p);
}

extern "C" size_t cincinnati_fuzz_allocated_bytes() { return live_bytes.load(); }
extern "C" size_t cincinnati_fuzz_peak_bytes() { return peak_bytes.load(); }
extern "C" size_t cincinnati_fuzz_reset_peak() {
  peak_bytes = live_bytes.load();
  return peak_bytes.load();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const cincinnati::fuzz::Entry entry = [] {
    for (const auto& e : cincinnati::fuzz::Entries()) {
      if (std::strcmp(e.name, CINCINNATI_FUZZ_ENTRY) == 0) return e.entry;
    }
    __builtin_trap();
  }();
  return entry(data, size);
}
