#include "reports/poll_sightings.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>

namespace cincinnati::server {
namespace {

constexpr int64_t kPromotionGap = 60;  // seconds between the first poll and the one that protects an id
constexpr size_t kMaxVersion = 31;
constexpr size_t kShards = 64;
constexpr uint32_t kMaxNames = 256;  // per shard
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
constexpr uint16_t kMaxCount = std::numeric_limits<uint16_t>::max();
constexpr uint8_t kProtected = 1;   // off probation
constexpr uint8_t kReferenced = 2;  // polled since the CLOCK hand last passed

using Key = std::array<uint64_t, 2>;      // the UUID's 128 bits
using Version = std::array<uint64_t, 4>;  // the version's bytes, zero-padded, its length last

struct Seen {
  uint64_t version;  // its salted hash
  uint32_t first, last;
};

// One id: a cache line. No member initializers, so that the slab is not written (and its
// pages not used) before ids arrive.
struct Entry {
  Key key;
  Seen seen[2];        // [0]: the latest version polled at
  uint16_t polls[2];   // 0: seen[1] not used yet
  uint32_t next;       // the next id on probation, oldest first (kNone: the last)
  uint16_t day;        // the Unix day `reports` counts
  uint16_t reports;
  uint16_t name;       // 1 + the index of seen[0]'s name in the shard's names; 0: none
  uint8_t flags;
};
static_assert(sizeof(Entry) == 64);

// A version's name, kept while some id last polled at it.
struct Name {
  uint64_t version;
  uint32_t refs;
  uint8_t size;
  char text[kMaxVersion];
};

uint64_t Rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

// SipHash-1-3 over whole words: a keyed hash that strangers cannot aim collisions at.
template <size_t N>
uint64_t SipHash(const uint64_t (&key)[2], const std::array<uint64_t, N>& words) {
  uint64_t v0 = key[0] ^ 0x736f6d6570736575ULL, v1 = key[1] ^ 0x646f72616e646f6dULL;
  uint64_t v2 = key[0] ^ 0x6c7967656e657261ULL, v3 = key[1] ^ 0x7465646279746573ULL;
  auto round = [&] {
    v0 += v1, v1 = Rotl(v1, 13), v1 ^= v0, v0 = Rotl(v0, 32);
    v2 += v3, v3 = Rotl(v3, 16), v3 ^= v2;
    v0 += v3, v3 = Rotl(v3, 21), v3 ^= v0;
    v2 += v1, v1 = Rotl(v1, 17), v1 ^= v2, v2 = Rotl(v2, 32);
  };
  for (uint64_t w : words) v3 ^= w, round(), v0 ^= w;
  const uint64_t last = uint64_t{N * 8} << 56;
  v3 ^= last, round(), v0 ^= last;
  v2 ^= 0xff, round(), round(), round();
  return v0 ^ v1 ^ v2 ^ v3;
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseKey(std::string_view id, Key& key) {
  if (id.size() != 36) return false;
  key = {0, 0};
  int digits = 0;
  for (size_t i = 0; i < id.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (id[i] != '-') return false;
      continue;
    }
    const int h = Hex(id[i]);
    if (h < 0) return false;
    uint64_t& half = key[digits < 16 ? 0 : 1];
    half = (half << 4) | static_cast<uint64_t>(h);
    ++digits;
  }
  return true;
}

bool PlainVersion(std::string_view v) {
  if (v.empty() || v.size() > kMaxVersion) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-';
  });
}

// The version as 32 bytes: one encoding per version, whatever its length.
bool PackVersion(std::string_view v, Version& out) {
  if (!PlainVersion(v)) return false;
  char bytes[32] = {};
  std::memcpy(bytes, v.data(), v.size());
  bytes[31] = static_cast<char>(v.size());
  std::memcpy(out.data(), bytes, sizeof bytes);
  return true;
}

uint32_t Seconds(int64_t now) { return static_cast<uint32_t>(std::clamp<int64_t>(now, 0, kNone)); }

uint16_t Day(int64_t now) { return static_cast<uint16_t>(std::clamp<int64_t>(now / 86400, 0, kMaxCount)); }

uint16_t CountOneMore(uint16_t n) { return n == kMaxCount ? n : static_cast<uint16_t>(n + 1); }

// Whether x lies in the cyclic interval (a, b].
bool CyclicallyWithin(uint32_t a, uint32_t x, uint32_t b) { return a < b ? (a < x && x <= b) : (a < x || x <= b); }

}  // namespace

// A shard's ids: a slab of entries (slots [0, used) hold ids, none is ever freed but by
// reuse), an open-addressing index of slots (linear probing, backward-shift deletion,
// so no tombstones), the probation list threaded through the entries, the CLOCK hand,
// and the names of the versions its ids last polled at. Every member under `mu`.
struct PollSightings::Shard {
  std::mutex mu;
  const uint64_t (*salt)[2] = nullptr;  // the sightings' SipHash key
  uint32_t capacity = 0, used = 0;
  std::unique_ptr<Entry[]> slab;
  // Each place: the high half of an id's hash, and 1 + its slot (0: empty). The hash
  // half lets a probe pass other ids, and a deletion find where they belong, without
  // reading their entries: one cache miss into the slab per lookup, for the one id.
  uint32_t index_size = 0;
  std::unique_ptr<uint64_t[]> index;
  uint32_t probation_head = kNone, probation_tail = kNone;
  uint32_t hand = 0;
  uint32_t name_capacity = 0, names_used = 0;
  std::unique_ptr<Name[]> names;

  void Allocate(uint32_t slots, const uint64_t (&key)[2]) {
    salt = &key;
    capacity = slots;
    slab.reset(new Entry[slots]);  // default-initialized: not written
    index_size = slots + slots / 2 + 1;  // at most two thirds full
    index = std::make_unique<uint64_t[]>(index_size);
    name_capacity = std::min(kMaxNames, slots);  // never more names than ids
    names = std::make_unique<Name[]>(name_capacity);
  }

  static uint32_t Tag(uint64_t hash) { return static_cast<uint32_t>(hash >> 32); }  // the shard took the low bits
  static uint32_t SlotOf(uint64_t place) { return static_cast<uint32_t>(place) - 1; }
  // The index's first place for a tag: the tag scaled to the index.
  uint32_t Home(uint32_t tag) const { return static_cast<uint32_t>((uint64_t{tag} * index_size) >> 32); }
  uint32_t Next(uint32_t i) const { return i + 1 == index_size ? 0 : i + 1; }

  Entry* Find(const Key& key, uint64_t hash) const {
    const uint32_t tag = Tag(hash);
    for (uint32_t i = Home(tag);; i = Next(i)) {
      const uint64_t place = index[i];
      if (place == 0) return nullptr;
      if (place >> 32 == tag && slab[SlotOf(place)].key == key) return &slab[SlotOf(place)];
    }
  }

  void AddToIndex(uint32_t slot, uint64_t hash) {
    uint32_t i = Home(Tag(hash));
    while (index[i] != 0) i = Next(i);
    index[i] = (uint64_t{Tag(hash)} << 32) | (slot + 1);
  }

  // Each later place of the run moves into the hole unless its home lies after the hole.
  void RemoveFromIndex(uint32_t slot) {
    uint32_t hole = Home(Tag(SipHash(*salt, slab[slot].key)));
    while (SlotOf(index[hole]) != slot) hole = Next(hole);
    for (uint32_t j = Next(hole); index[j] != 0; j = Next(j)) {
      if (CyclicallyWithin(hole, Home(static_cast<uint32_t>(index[j] >> 32)), j)) continue;
      index[hole] = index[j];
      hole = j;
    }
    index[hole] = 0;
  }

  void AppendToProbation(uint32_t slot) {
    slab[slot].next = kNone;
    if (probation_tail == kNone) {
      probation_head = slot;
    } else {
      slab[probation_tail].next = slot;
    }
    probation_tail = slot;
  }

  // The oldest id still on probation. Promoted ids stay on the list until they reach
  // its head, where they are dropped: so every id on probation is on it, and the list
  // is empty when none is.
  uint32_t PopProbation() {
    while (probation_head != kNone) {
      const uint32_t slot = probation_head;
      probation_head = slab[slot].next;
      if (probation_head == kNone) probation_tail = kNone;
      if (!(slab[slot].flags & kProtected)) return slot;
    }
    return kNone;
  }

  // Every id is protected here: the first not polled since the hand last passed it.
  uint32_t SweepClock() {
    for (;;) {
      const uint32_t slot = hand;
      hand = hand + 1 == used ? 0 : hand + 1;
      if (!(slab[slot].flags & kReferenced)) return slot;
      slab[slot].flags &= static_cast<uint8_t>(~kReferenced);
    }
  }

  uint32_t Evict() {
    uint32_t slot = PopProbation();
    if (slot == kNone) slot = SweepClock();
    RemoveFromIndex(slot);
    ReleaseName(slab[slot].name);
    return slot;
  }

  // 1 + the index of `version`'s name, taken once more; 0 when the table is full.
  uint16_t TakeName(uint64_t version, std::string_view text) {
    uint32_t free = kNone;
    for (uint32_t i = 0; i < names_used; ++i) {
      if (names[i].refs == 0) {
        free = std::min(free, i);
      } else if (names[i].version == version) {
        ++names[i].refs;
        return static_cast<uint16_t>(i + 1);
      }
    }
    if (free == kNone) {
      if (names_used == name_capacity) return 0;
      free = names_used++;
    }
    Name& name = names[free];
    name.version = version;
    name.refs = 1;
    name.size = static_cast<uint8_t>(text.size());
    std::memcpy(name.text, text.data(), text.size());
    return static_cast<uint16_t>(free + 1);
  }

  void ReleaseName(uint16_t name) {
    if (name != 0) --names[name - 1].refs;
  }

  void Admit(const Key& key, uint64_t hash, uint64_t version, std::string_view text, uint32_t now) {
    const uint32_t slot = used < capacity ? used++ : Evict();
    Entry& e = slab[slot];
    e = Entry{};
    e.key = key;
    e.seen[0] = {version, now, now};
    e.polls[0] = 1;
    e.name = TakeName(version, text);
    AddToIndex(slot, hash);
    AppendToProbation(slot);
  }

  void Poll(Entry& e, uint64_t version, std::string_view text, uint32_t now) {
    if (e.seen[0].version != version) {
      if (e.polls[1] > 0 && e.seen[1].version == version) {
        std::swap(e.seen[0], e.seen[1]);
        std::swap(e.polls[0], e.polls[1]);
      } else {
        e.seen[1] = e.seen[0];
        e.polls[1] = e.polls[0];
        e.seen[0] = {version, now, now};
        e.polls[0] = 0;
      }
      ReleaseName(e.name);
      e.name = TakeName(version, text);
    }
    e.seen[0].last = std::max(e.seen[0].last, now);
    e.polls[0] = CountOneMore(e.polls[0]);
    const uint32_t first = e.polls[1] > 0 ? std::min(e.seen[0].first, e.seen[1].first) : e.seen[0].first;
    if (e.flags & kProtected) {
      e.flags |= kReferenced;
    } else if (int64_t{now} - first >= kPromotionGap) {
      e.flags |= kProtected;
    }
  }

  // counts[0]: ids whose version has no name; counts[1 + i]: at names[i].
  void CountLatest(int64_t now, int64_t window, std::vector<uint64_t>& counts) const {
    counts.assign(name_capacity + 1, 0);
    for (uint32_t slot = 0; slot < used; ++slot) {
      const Entry& e = slab[slot];
      if (e.seen[0].last < now - window || e.seen[0].last > now) continue;
      ++counts[e.name];
    }
  }

  // CountLatest's counts, and the counted ids with their names (as in `counts`).
  void CollectLatest(int64_t now, int64_t window, std::vector<uint64_t>& counts,
                     std::vector<std::pair<Key, uint16_t>>& ids) const {
    counts.assign(name_capacity + 1, 0);
    ids.clear();
    for (uint32_t slot = 0; slot < used; ++slot) {
      const Entry& e = slab[slot];
      if (e.seen[0].last < now - window || e.seen[0].last > now) continue;
      ++counts[e.name];
      ids.emplace_back(e.key, e.name);
    }
  }
};

PollSightings::PollSightings(size_t capacity) : shards_(std::make_unique<Shard[]>(kShards)) {
  std::random_device random;
  for (uint64_t& half : salt_) half = (uint64_t{random()} << 32) | random();
  const size_t per_shard = std::clamp<size_t>(capacity / kShards, 1, size_t{1} << 30);
  for (size_t i = 0; i < kShards; ++i) shards_[i].Allocate(static_cast<uint32_t>(per_shard), salt_);
}

PollSightings::~PollSightings() = default;

PollSightings::Shard& PollSightings::ShardOf(uint64_t key_hash) const { return shards_[key_hash % kShards]; }

template <typename Use>
bool PollSightings::WithEntry(std::string_view id, Use use) const {
  Key key;
  if (!ParseKey(id, key)) return false;
  const uint64_t hash = SipHash(salt_, key);
  Shard& shard = ShardOf(hash);
  std::lock_guard lock(shard.mu);
  Entry* e = shard.Find(key, hash);
  return e != nullptr && use(*e);
}

void PollSightings::Record(std::string_view id, std::string_view version, int64_t now) {
  Key key;
  Version packed;
  if (!ParseKey(id, key) || !PackVersion(version, packed)) return;
  const uint64_t hash = SipHash(salt_, key), version_hash = SipHash(salt_, packed);
  Shard& shard = ShardOf(hash);
  std::lock_guard lock(shard.mu);
  if (Entry* e = shard.Find(key, hash)) {
    shard.Poll(*e, version_hash, version, Seconds(now));
  } else {
    shard.Admit(key, hash, version_hash, version, Seconds(now));
  }
}

bool PollSightings::SeenAt(std::string_view id, std::string_view version, int64_t now, int64_t window, int64_t min_age,
                           int min_polls) const {
  Version packed;
  if (!PackVersion(version, packed)) return false;  // never kept
  const uint64_t version_hash = SipHash(salt_, packed);
  return WithEntry(id, [&](const Entry& e) {
    for (int k = 0; k < 2; ++k) {
      const Seen& s = e.seen[k];
      if (e.polls[k] > 0 && s.version == version_hash && e.polls[k] >= min_polls && s.first <= now - min_age &&
          s.last >= now - window) {
        return true;
      }
    }
    return false;
  });
}

bool PollSightings::ChargeReport(std::string_view id, int64_t now, int per_day) {
  return WithEntry(id, [&](Entry& e) {
    const uint16_t day = Day(now);
    if (e.day != day) {
      e.day = day;
      e.reports = 0;
    }
    if (e.reports >= per_day || e.reports == kMaxCount) return false;
    ++e.reports;
    return true;
  });
}

void PollSightings::RefundReport(std::string_view id, int64_t now) {
  WithEntry(id, [&](Entry& e) {
    if (e.day == Day(now) && e.reports > 0) --e.reports;
    return true;
  });
}

size_t PollSightings::size() const {
  size_t n = 0;
  for (size_t i = 0; i < kShards; ++i) {
    std::lock_guard lock(shards_[i].mu);
    n += shards_[i].used;
  }
  return n;
}

namespace {

constexpr size_t kOther = kMaxNames;  // a Tally's place for "other"

// Counts by version across shards: named in the order first met, up to 256.
class Tally {
 public:
  // Where `version` is counted: its place among the named, or kOther.
  size_t Add(uint64_t version, std::string_view name, uint64_t n) {
    auto it = std::find_if(named_.begin(), named_.end(), [&](const Named& c) { return c.version == version; });
    if (it != named_.end()) {
      it->count += n;
      return static_cast<size_t>(it - named_.begin());
    }
    if (named_.size() < kMaxNames) {
      named_.push_back({version, std::string(name), n});
      return named_.size() - 1;
    }
    other_ += n;
    return kOther;
  }
  void AddOther(uint64_t n) { other_ += n; }
  size_t named() const { return named_.size(); }
  std::vector<std::pair<std::string, uint64_t>> Take() && {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (Named& c : named_) out.emplace_back(std::move(c.name), c.count);
    if (other_ > 0) out.emplace_back("other", other_);
    return out;
  }

 private:
  struct Named {
    uint64_t version;
    std::string name;
    uint64_t count;
  };
  std::vector<Named> named_;
  uint64_t other_ = 0;
};

}  // namespace

std::vector<std::pair<std::string, uint64_t>> PollSightings::CountByVersion(int64_t now, int64_t window) const {
  Tally tally;
  std::vector<uint64_t> counts;
  for (size_t s = 0; s < kShards; ++s) {
    Shard& shard = shards_[s];
    std::lock_guard lock(shard.mu);
    shard.CountLatest(now, window, counts);
    tally.AddOther(counts[0]);
    for (uint32_t i = 0; i < shard.names_used; ++i) {
      const Name& name = shard.names[i];
      if (counts[i + 1] > 0) tally.Add(name.version, std::string_view(name.text, name.size), counts[i + 1]);
    }
  }
  return std::move(tally).Take();
}

std::vector<PollSightings::VersionSketch> PollSightings::SketchByVersion(int64_t now, int64_t window,
                                                                         const SketchKey& key) const {
  const uint64_t shared[2] = {key[0], key[1]};
  Tally tally;
  std::vector<FleetSketch> sketches(kMaxNames + 1);  // by the tally's places; kOther last
  std::vector<uint64_t> counts;
  std::vector<size_t> place;  // by the shard's name (0: none): the tally's place
  std::vector<std::pair<Key, uint16_t>> ids;
  for (size_t s = 0; s < kShards; ++s) {
    {
      Shard& shard = shards_[s];
      std::lock_guard lock(shard.mu);
      shard.CollectLatest(now, window, counts, ids);
      tally.AddOther(counts[0]);
      place.assign(counts.size(), kOther);
      for (uint32_t i = 0; i < shard.names_used; ++i) {
        const Name& name = shard.names[i];
        if (counts[i + 1] > 0) place[i + 1] = tally.Add(name.version, std::string_view(name.text, name.size), counts[i + 1]);
      }
    }
    // Hashed outside the lock: the graph path waits only for the copy.
    for (const auto& id : ids) sketches[place[id.second]].Add(SipHash(shared, id.first));
  }
  const size_t named = tally.named();
  std::vector<VersionSketch> out;
  for (auto& [version, count] : std::move(tally).Take()) {
    // Take() lists the named in their places, then "other" when it counted any.
    FleetSketch& sketch = sketches[out.size() < named ? out.size() : kOther];
    out.push_back({std::move(version), count, std::move(sketch)});
  }
  return out;
}

}  // namespace cincinnati::server
