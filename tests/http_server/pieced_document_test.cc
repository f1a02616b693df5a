// PiecedDocument's remembered CRCs: a keyed selection's gzip member is exactly the
// unkeyed one, the table is consulted (a key is trusted to name its ids), and readers
// racing writers over more selections than slots never get a wrong trailer.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "../fuzz/gunzip.h"
#include "http_server/pieced_document.h"

namespace cincinnati {
namespace {

using http_server::PiecedDocument;

std::string Inflated(const std::string& head, const std::string& tail) {
  return fuzz::Gunzip(head + tail).value_or("(not one valid gzip member)");
}

TEST(PiecedDocumentCrcTest, AKeyedSelectionIsTheSameBytesAndItsCrcIsRemembered) {
  PiecedDocument doc("{\"nodes\":[]", {",", "[1,2]", "[3,4]", "]}"});
  const std::vector<uint32_t> a = {1, 0, 2, 3}, b = {1, 3};
  const PiecedDocument::SelectionKey key{0x1234, 0x5678};
  EXPECT_EQ(doc.GzipTail(a, key), doc.GzipTail(a));
  EXPECT_EQ(doc.GzipTail(a, key), doc.GzipTail(a));  // the second from the table
  EXPECT_EQ(Inflated(*doc.gzip_head(), doc.GzipTail(a, key)), doc.Plain(a));
  // The table is what answers: the same key for other ids (which the contract forbids)
  // gets the first selection's CRC, and zlib refuses the member.
  EXPECT_EQ(fuzz::Gunzip(*doc.gzip_head() + doc.GzipTail(b, key)), std::nullopt);
  // Another key for those ids is checksummed afresh.
  EXPECT_EQ(Inflated(*doc.gzip_head(), doc.GzipTail(b, PiecedDocument::SelectionKey{0x1234, 0x5679})), doc.Plain(b));
}

TEST(PiecedDocumentCrcTest, ThreadsOverMoreSelectionsThanSlotsNeverGetAWrongTrailer) {
  std::vector<std::string> pieces;
  for (int i = 0; i < 16; ++i) pieces.push_back("[" + std::to_string(i) + "," + std::to_string(i * 7) + "],");
  PiecedDocument doc("{\"edges\":[", pieces);
  // Selection s: the pieces whose bit is set in s; four times as many as slots, so
  // writers keep replacing what readers read.
  constexpr uint64_t kSelections = 4 * PiecedDocument::kCrcSlots;
  auto ids_of = [&](uint64_t s) {
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < pieces.size(); ++i) {
      if ((s * 2654435761u) >> i & 1) ids.push_back(i);
    }
    return ids;
  };
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      for (int round = 0; round < 4000; ++round) {
        const uint64_t s = rng() % kSelections;
        const std::vector<uint32_t> ids = ids_of(s);
        const std::string gz = *doc.gzip_head() + doc.GzipTail(ids, PiecedDocument::SelectionKey{s, s});
        if (fuzz::Gunzip(gz) != doc.Plain(ids)) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace cincinnati
