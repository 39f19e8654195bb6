// The chunk cache: records equal sequential reads, one decode per chunk for nearby reads, the byte
// bound, concurrent gets, and faults that are reported and not cached.
#include "chunk_cache.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "file.h"
#include "index.h"
#include "reader.h"
#include "test_util.h"
#include "writer.h"

using namespace edl::recordio;  // NOLINT
using edl::prefetch::ChunkCache;

namespace {

struct Opened {
  std::shared_ptr<LocalFile> file;
  std::shared_ptr<FileIndex> index;
};

Opened Open(const std::string& path) {
  Opened o;
  auto f = LocalFile::Open(path);
  CHECK_OK(f.status());
  o.file = f.value();
  o.index = std::make_shared<FileIndex>();
  CHECK_OK(ScanIndex(*o.file, o.index.get()));
  return o;
}

std::string Record(ChunkCache& cache, uint64_t i) {
  auto c = cache.Get(i);
  CHECK_OK(c.status());
  if (!c.ok()) return "";
  uint32_t len = 0;
  const uint8_t* p = c.value()->RecordData(i - c.value()->first_record, &len);
  return std::string(reinterpret_cast<const char*>(p), len);
}

}  // namespace

TEST(RandomGetsEqualSequentialReadsAndDecodeEachChunkOnce) {
  for (const char* name : {"seq-gzip-64k.rio", "seq-snappy-64k.rio", "seq-none-64k.rio"}) {
    Opened o = Open(edl::test::GoldenPath(name));
    ReadOutput all;
    CHECK_OK(ReadRecords(*o.file, *o.index, 0, o.index->num_records, false, &all));
    const auto* b = reinterpret_cast<const uint32_t*>(all.bounds.data());
    ChunkCache cache(o.file, o.index, uint64_t{1} << 30);
    edl::test::Rng rng(9);
    for (int k = 0; k < 5000; ++k) {
      const uint64_t i = rng.Below(static_cast<uint32_t>(o.index->num_records));
      CHECK(Record(cache, i) ==
            std::string(reinterpret_cast<const char*>(all.data.data() + b[2 * i]),
                        b[2 * i + 1] - b[2 * i]));
    }
    auto s = cache.Stats();
    // Everything fits: each chunk was decoded exactly once.
    CHECK_EQ(s.decodes, o.index->chunks.size());
    CHECK_EQ(s.hits + s.misses, 5000u);
  }
}

TEST(BytesStayWithinTheCapacity) {
  Opened o = Open(edl::test::GoldenPath("seq-none-64k.rio"));
  const uint64_t capacity = 200 << 10;  // about 3 chunks of 64 KiB
  ChunkCache cache(o.file, o.index, capacity);
  for (uint64_t i = 0; i < o.index->num_records; i += 37) {
    Record(cache, i);
    CHECK(cache.Stats().bytes <= capacity);
  }
  auto s = cache.Stats();
  CHECK(s.evictions > 0);
  CHECK(s.chunks >= 2);
  CHECK(cache.Lookup(0) == nullptr);  // long evicted
  CHECK(cache.Lookup(o.index->num_records - 1) != nullptr);
}

TEST(ConcurrentGetsShareDecodes) {
  Opened o = Open(edl::test::GoldenPath("seq-gzip-64k.rio"));
  ChunkCache cache(o.file, o.index, uint64_t{1} << 30);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, &o] {
      for (uint64_t i = 0; i < o.index->num_records; i += 3) Record(cache, i);
    });
  }
  for (auto& t : threads) t.join();
  CHECK_EQ(cache.Stats().decodes, o.index->chunks.size());
}

TEST(FaultsAreReportedAndNotCached) {
  Opened o = Open(edl::test::GoldenPath("bad-crc-none-64k.rio"));
  ChunkCache cache(o.file, o.index, uint64_t{1} << 30);
  size_t bad = 0;
  for (size_t c = 0; c < o.index->chunks.size(); ++c) {
    auto r = cache.Get(o.index->chunks[c].first_record);
    if (!r.ok()) {
      ++bad;
      CHECK(r.status().code() == ErrorCode::kChecksum);
      CHECK_EQ(r.status().chunk(), static_cast<int64_t>(c));
      CHECK(cache.Lookup(o.index->chunks[c].first_record) == nullptr);
    }
  }
  CHECK(bad >= 1);
  CHECK(cache.Get(o.index->num_records).status().code() == ErrorCode::kOutOfRange);
}
