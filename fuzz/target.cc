// One libFuzzer target: CINCINNATI_FUZZ_ENTRY names the entry (see entries.h).
#include <sanitizer/allocator_interface.h>

#include <atomic>
#include <cstring>

#include "entries.h"

// Counted allocations, for the entries that state a memory bound (entries.cc). The
// sanitizer's allocator reports every malloc and free, of every form of operator new
// too (replacing operator new instead would clash with ASan's own nothrow form).
namespace {
// Signed: memory allocated before the hooks were installed may be freed after.
std::atomic<long long> live_bytes{0}, peak_bytes{0};

void CountMalloc(const volatile void*, size_t size) {
  const long long now = live_bytes.fetch_add(static_cast<long long>(size)) + static_cast<long long>(size);
  for (long long peak = peak_bytes.load(); now > peak && !peak_bytes.compare_exchange_weak(peak, now);) {
  }
}

void CountFree(const volatile void* p) {
  if (p) live_bytes.fetch_sub(static_cast<long long>(__sanitizer_get_allocated_size(const_cast<const void*>(p))));
}

[[maybe_unused]] const int hooks_installed = __sanitizer_install_malloc_and_free_hooks(CountMalloc, CountFree);
}  // namespace

extern "C" long long cincinnati_fuzz_allocated_bytes() { return live_bytes.load(); }
extern "C" long long cincinnati_fuzz_peak_bytes() { return peak_bytes.load(); }
extern "C" long long cincinnati_fuzz_reset_peak() {
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
