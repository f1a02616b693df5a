// Small indexes of names for the fleet file's reader (fleet_file.cc): IndexTable finds
// an element of an array the caller owns by the name each element has, in 4 to 16 bytes
// a name, where a std::set<std::string> spends about 80 (a node and a copy of the name);
// KeySet refuses a mapping's duplicate key. Not thread-safe; never throws but for memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace cincinnati::upgrade {

// Open addressing over indices into an array the caller owns, found by the name each
// element has (name_of(i)).
class IndexTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  template <typename NameOf>
  uint32_t Find(std::string_view name, const NameOf& name_of) const {
    if (slots_.empty()) return kNone;
    const size_t mask = slots_.size() - 1;
    for (size_t i = std::hash<std::string_view>{}(name) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == kNone || name_of(slots_[i]) == name) return slots_[i];
    }
  }

  // `name` maps to `index` from now on (a later anchor of a name shadows the earlier).
  template <typename NameOf>
  void Put(std::string_view name, uint32_t index, const NameOf& name_of) {
    if ((size_ + 1) * 2 > slots_.size()) Grow(name_of);
    const size_t mask = slots_.size() - 1;
    for (size_t i = std::hash<std::string_view>{}(name) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == kNone) ++size_;
      if (slots_[i] == kNone || name_of(slots_[i]) == name) {
        slots_[i] = index;
        return;
      }
    }
  }

  void Clear() {
    slots_.clear();
    size_ = 0;
  }

 private:
  template <typename NameOf>
  void Grow(const NameOf& name_of) {
    std::vector<uint32_t> old(std::max<size_t>(16, slots_.size() * 2), kNone);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (uint32_t index : old) {
      if (index == kNone) continue;
      size_t i = std::hash<std::string_view>{}(name_of(index)) & mask;
      while (slots_[i] != kNone) i = (i + 1) & mask;
      slots_[i] = index;
    }
  }

  std::vector<uint32_t> slots_;
  size_t size_ = 0;
};

// The keys of one mapping, to refuse a duplicate. A cluster has four: they are scanned;
// a mapping of more gets an index.
class KeySet {
 public:
  bool Insert(std::string_view key) {
    const auto name_of = [this](uint32_t i) { return Key(i); };
    const uint32_t count = static_cast<uint32_t>(ends_.size());
    if (count < kScanned) {
      for (uint32_t i = 0; i < count; ++i) {
        if (Key(i) == key) return false;
      }
    } else {
      if (count == kScanned) {
        for (uint32_t i = 0; i < count; ++i) index_.Put(Key(i), i, name_of);
      }
      if (index_.Find(key, name_of) != IndexTable::kNone) return false;
    }
    pool_.append(key);
    ends_.push_back(static_cast<uint32_t>(pool_.size()));
    if (count >= kScanned) index_.Put(key, count, name_of);
    return true;
  }

  void Clear() {
    pool_.clear();
    ends_.clear();
    index_.Clear();
  }

 private:
  static constexpr uint32_t kScanned = 8;
  std::string_view Key(uint32_t i) const {
    const uint32_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(pool_).substr(begin, ends_[i] - begin);
  }
  std::string pool_;
  std::vector<uint32_t> ends_;
  IndexTable index_;
};


}  // namespace cincinnati::upgrade
