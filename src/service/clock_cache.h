// ClockCache: shared values by string key, bounded by a byte budget, evicting by CLOCK
// (second chance). A lookup takes a shared lock and marks its entry referenced (a store
// only when the mark is clear, so a hot entry's line is not written on every hit); an
// insert takes the exclusive lock and moves the hand over the ring of entries: a marked
// entry loses its mark and is passed, an unmarked one is evicted, until the new entry's
// cost fits. New entries go just behind the hand, so they survive a whole turn.
// The caller states each entry's cost (bytes); the sum of kept costs never exceeds
// `max_bytes` after an insert. An entry costing more than the budget is not kept.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

namespace cincinnati::server {

template <typename Value>
class ClockCache {
 public:
  explicit ClockCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  // The value kept for `key`, or null.
  std::shared_ptr<Value> Find(const std::string& key) const {
    std::shared_lock lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    Slot& slot = *it->second;
    if (!slot.referenced.load(std::memory_order_relaxed)) slot.referenced.store(true, std::memory_order_relaxed);
    return slot.value;
  }

  // Keeps `value` for `key` at `cost` bytes, evicting as needed; returns the value now
  // kept for `key` (an earlier one when another thread inserted first), or `value` itself
  // when it is not kept (its cost exceeds the budget). `evicted`, when set, gets the
  // number of entries this insert evicted.
  std::shared_ptr<Value> Insert(const std::string& key, std::shared_ptr<Value> value, size_t cost,
                                size_t* evicted = nullptr) {
    if (evicted) *evicted = 0;
    if (cost > max_bytes_) return value;
    std::unique_lock lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) return it->second->value;
    while (bytes_ + cost > max_bytes_ && !ring_.empty()) {
      EvictOne();
      if (evicted) ++*evicted;
    }
    auto slot = ring_.emplace(hand_, key, std::move(value), cost);  // just behind the hand
    index_.emplace(key, slot);
    bytes_ += cost;
    return slot->value;
  }

  size_t bytes() const {
    std::shared_lock lock(mu_);
    return bytes_;
  }
  size_t entries() const {
    std::shared_lock lock(mu_);
    return index_.size();
  }
  uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  size_t max_bytes() const { return max_bytes_; }

 private:
  struct Slot {
    Slot(std::string k, std::shared_ptr<Value> v, size_t c) : key(std::move(k)), value(std::move(v)), cost(c) {}
    std::string key;
    std::shared_ptr<Value> value;
    size_t cost;
    mutable std::atomic<bool> referenced{false};
  };
  using Ring = std::list<Slot>;

  // Under the exclusive lock, with a non-empty ring.
  void EvictOne() {
    for (;;) {
      if (hand_ == ring_.end()) hand_ = ring_.begin();
      if (!hand_->referenced.exchange(false, std::memory_order_relaxed)) break;
      ++hand_;
    }
    bytes_ -= hand_->cost;
    index_.erase(hand_->key);
    hand_ = ring_.erase(hand_);
    evictions_.fetch_add(1, std::memory_order_relaxed);
  }

  const size_t max_bytes_;
  mutable std::shared_mutex mu_;
  Ring ring_;
  typename Ring::iterator hand_ = ring_.end();  // the next entry looked at
  std::unordered_map<std::string, typename Ring::iterator> index_;
  size_t bytes_ = 0;
  std::atomic<uint64_t> evictions_{0};
};

}  // namespace cincinnati::server
