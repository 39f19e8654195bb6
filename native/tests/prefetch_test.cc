// The prefetcher: order and content equal sequential reads for any thread count, backpressure,
// cancellation mid-stream, and an error in one range that loses none of the others.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "file.h"
#include "index.h"
#include "prefetcher.h"
#include "reader.h"
#include "test_util.h"
#include "writer.h"

using namespace edl::recordio;  // NOLINT
using edl::prefetch::Item;
using edl::prefetch::PopResult;
using edl::prefetch::Prefetcher;
using edl::prefetch::PrefetchOptions;
using edl::prefetch::Range;

namespace {

std::string TempDir() {
  static const std::string dir = edl::test::MakeTempDir("edl-prefetch-test");
  return dir;
}

// Writes `n` random records (sizes 0..max_len) and returns the path.
std::string MakeFile(const std::string& name, Compressor c, uint64_t n, uint32_t max_len,
                     uint64_t chunk_bytes, uint64_t seed) {
  const std::string path = TempDir() + "/" + name;
  WriterOptions o;
  o.compressor = c;
  o.max_chunk_bytes = chunk_bytes;
  auto w = Writer::Create(path, o);
  CHECK_OK(w.status());
  edl::test::Rng rng(seed);
  for (uint64_t i = 0; i < n; ++i) {
    std::string r = std::to_string(i) + ":" + rng.Bytes(rng.Below(max_len + 1), true);
    CHECK_OK(w.value()->Write(reinterpret_cast<const uint8_t*>(r.data()), r.size()));
  }
  CHECK_OK(w.value()->Close());
  return path;
}

// One delivered record or error, flattened, for comparisons.
struct Out {
  std::vector<std::string> lines;
};

std::string RecordLine(uint64_t range, uint64_t index, const uint8_t* p, uint32_t n) {
  return std::to_string(range) + "#" + std::to_string(index) + "=" +
         std::string(reinterpret_cast<const char*>(p), n);
}

// What sequential reads of the ranges give, record by record.
std::vector<std::string> Sequential(const std::vector<Range>& ranges) {
  std::vector<std::string> lines;
  for (size_t r = 0; r < ranges.size(); ++r) {
    auto f = LocalFile::Open(ranges[r].path);
    CHECK_OK(f.status());
    FileIndex index;
    CHECK_OK(ScanIndex(*f.value(), &index));
    ReadOutput out;
    CHECK_OK(ReadRecords(*f.value(), index, ranges[r].start, ranges[r].count, false, &out));
    const auto* b = reinterpret_cast<const uint32_t*>(out.bounds.data());
    for (uint64_t i = 0; i < out.delivered; ++i) {
      lines.push_back(
          RecordLine(r, ranges[r].start + i, out.data.data() + b[2 * i], b[2 * i + 1] - b[2 * i]));
    }
    if (out.has_error) lines.push_back("error " + std::string(out.error.status.code_name()));
  }
  return lines;
}

// Drains a prefetcher: records as lines, plus batch shapes (for determinism across threads).
struct Drained {
  std::vector<std::string> records;
  std::vector<std::string> items;
  std::vector<Item> errors;
  uint64_t batch_bytes = 0;  // data and bounds of the batches delivered
};

// The storage of a delivered batch buffer, as a consumer hands it back (Prefetcher::Recycle): the
// recycled block it was assembled into, or its own storage, freed by the last owner.
edl::prefetch::SpareBlock SpareOf(ByteBuffer& b, std::shared_ptr<void>& owner) {
  edl::prefetch::SpareBlock spare;
  spare.cap = b.capacity();
  if (spare.cap == 0) return edl::prefetch::SpareBlock();
  if (b.borrowed()) {
    spare.owner = std::move(owner);
    spare.p = b.Release();
  } else {
    const size_t cap = spare.cap;
    spare.p = b.Release();
    spare.owner = std::shared_ptr<void>(spare.p, [cap](void* q) { FreeBlock(q, cap); });
  }
  return spare;
}

// `before_pop(i)`, when given, runs before the i-th Pop (a tuner changing the read-ahead).
Drained Drain(Prefetcher& p, uint32_t batch_records, uint64_t batch_bytes,
              const std::vector<Range>& ranges, bool recycle = false,
              const std::function<void(size_t)>& before_pop = nullptr) {
  Drained d;
  Item item;
  std::vector<uint64_t> next(ranges.size());
  for (size_t r = 0; r < ranges.size(); ++r) next[r] = ranges[r].start;
  for (size_t pops = 0;; ++pops) {
    if (before_pop) before_pop(pops);
    PopResult res = p.Pop(&item, true);
    if (res != PopResult::kItem) {
      CHECK(res == PopResult::kEnded);
      break;
    }
    if (item.kind == Item::Kind::kError) {
      d.items.push_back("E" + std::to_string(item.range_id) + "@" +
                        std::to_string(item.first_record) + " " + item.error.status.code_name());
      d.records.push_back("error " + std::string(item.error.status.code_name()));
      d.errors.push_back(std::move(item));
      continue;
    }
    CHECK(item.range_id < ranges.size());
    CHECK(item.records <= batch_records);
    CHECK_EQ(item.bounds.size(), item.records * 8);
    CHECK_EQ(item.first_record, next[item.range_id]);
    const auto* b = reinterpret_cast<const uint32_t*>(item.bounds.data());
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < item.records; ++i) {
      CHECK(b[2 * i] <= b[2 * i + 1] && b[2 * i + 1] <= item.data.size());
      bytes += b[2 * i + 1] - b[2 * i];
      d.records.push_back(RecordLine(item.range_id, item.first_record + i,
                                     item.data.data() + b[2 * i], b[2 * i + 1] - b[2 * i]));
    }
    // Over the byte limit only when one record alone is.
    CHECK(bytes <= batch_bytes || item.records == 1);
    next[item.range_id] += item.records;
    d.batch_bytes += item.data.size() + item.bounds.size();
    d.items.push_back("B" + std::to_string(item.range_id) + "@" +
                      std::to_string(item.first_record) + "+" + std::to_string(item.records) +
                      (item.range_done ? "!" : ""));
    if (recycle) {
      p.Recycle(SpareOf(item.data, item.data_owner), SpareOf(item.bounds, item.bounds_owner));
    }
  }
  return d;
}

std::vector<Range> RandomRanges(const std::vector<std::string>& files,
                                const std::vector<uint64_t>& sizes, size_t n, uint64_t seed) {
  edl::test::Rng rng(seed);
  std::vector<Range> ranges;
  for (size_t i = 0; i < n; ++i) {
    const size_t f = rng.Below(static_cast<uint32_t>(files.size()));
    const uint64_t start = rng.Below(static_cast<uint32_t>(sizes[f] + 1));
    const uint64_t count = rng.Below(static_cast<uint32_t>(sizes[f] - start + 1));
    ranges.push_back({files[f], start, count});
  }
  return ranges;
}

}  // namespace

TEST(OrderAndContentEqualSequentialReadsForAnyThreadCount) {
  const std::vector<std::string> files = {
      MakeFile("none.rio", Compressor::kNone, 3000, 300, 16 << 10, 1),
      MakeFile("snappy.rio", Compressor::kSnappy, 2500, 500, 32 << 10, 2),
      MakeFile("gzip.rio", Compressor::kGzip, 2000, 200, 8 << 10, 3)};
  const std::vector<uint64_t> sizes = {3000, 2500, 2000};
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const auto ranges = RandomRanges(files, sizes, 12, seed);
    const auto want = Sequential(ranges);
    for (uint32_t batch : {1u, 7u, 64u}) {
      for (uint64_t batch_bytes : {uint64_t{1} << 30, uint64_t{2000}}) {
        std::vector<std::string> first_items;
        for (uint32_t threads : {0u, 1u, 2u, 4u, 8u}) {
          PrefetchOptions o;
          o.threads = threads;
          o.batch_records = batch;
          o.batch_bytes = batch_bytes;
          o.max_buffered_bytes = 256 << 10;
          o.max_buffered_batches = 8;
          o.piece_bytes = 20 << 10;
          o.max_open_files = 2;
          Prefetcher p(o);
          CHECK_OK(p.Start());
          for (const auto& r : ranges) CHECK(p.Enqueue(r).ok());
          p.EndInput();
          Drained d = Drain(p, batch, batch_bytes, ranges);
          CHECK(d.records == want);
          if (threads == 0) {
            first_items = d.items;
          } else {
            // Same batches, cut at the same places, whatever the number of threads.
            CHECK(d.items == first_items);
          }
          auto s = p.Stats();
          CHECK_EQ(s.ranges_done, ranges.size());
          CHECK_EQ(s.buffered_bytes, 0u);
        }
      }
    }
  }
}

TEST(BatchesAssembledIntoRecycledStorageAreTheSame) {
  const std::vector<std::string> files = {
      MakeFile("recycle-none.rio", Compressor::kNone, 3000, 300, 16 << 10, 11),
      MakeFile("recycle-gzip.rio", Compressor::kGzip, 2000, 600, 8 << 10, 12)};
  const std::vector<uint64_t> sizes = {3000, 2000};
  const auto ranges = RandomRanges(files, sizes, 16, 5);
  const auto want = Sequential(ranges);
  for (uint32_t threads : {0u, 1u, 2u}) {
    for (uint32_t batch : {7u, 64u}) {
      PrefetchOptions o;
      o.threads = threads;
      o.batch_records = batch;
      o.max_buffered_bytes = 256 << 10;
      o.max_buffered_batches = 8;
      o.piece_bytes = 20 << 10;
      Prefetcher p(o);
      CHECK_OK(p.Start());
      for (const auto& r : ranges) CHECK(p.Enqueue(r).ok());
      p.EndInput();
      // Records vary in size: some batches outgrow the block they started in, and still come out
      // whole (in new storage).
      Drained d = Drain(p, batch, uint64_t{1} << 30, ranges, true);
      CHECK(d.records == want);
      auto s = p.Stats();
      CHECK(s.batches_recycled > 0);
      CHECK(s.spare_blocks <= 2 * Prefetcher::kMaxSpareBlocks);
      p.Close();
      CHECK_EQ(p.Stats().spare_blocks, 0u);
    }
  }
}

TEST(EveryRangeEndsWithOneRangeDoneItemEvenWhenEmpty) {
  const std::string f = MakeFile("small.rio", Compressor::kSnappy, 100, 50, 1 << 10, 4);
  const std::vector<Range> ranges = {{f, 0, 0}, {f, 10, 64}, {f, 100, 0}, {f, 0, 100}};
  PrefetchOptions o;
  o.threads = 2;
  o.batch_records = 32;
  Prefetcher p(o);
  CHECK_OK(p.Start());
  for (const auto& r : ranges) CHECK(p.Enqueue(r).ok());
  p.EndInput();
  Drained d = Drain(p, 32, uint64_t{1} << 30, ranges);
  const std::vector<std::string> want = {"B0@0+0!", "B1@10+32", "B1@42+32!", "B2@100+0!",
                                         "B3@0+32", "B3@32+32", "B3@64+32",  "B3@96+4!"};
  CHECK(d.items == want);
}

TEST(BackpressureKeepsBufferedBytesWithinTheBudgetPlusOneBatch) {
  // Stored chunks: decode estimates are exact, so the bound is strict.
  const std::string f = MakeFile("big.rio", Compressor::kNone, 20000, 400, 32 << 10, 5);
  for (uint32_t threads : {1u, 2u, 4u}) {
    PrefetchOptions o;
    o.threads = threads;
    o.batch_records = 64;
    o.max_buffered_bytes = 256 << 10;
    o.max_buffered_batches = 4;
    // piece_bytes stays at its 1 MiB default: pieces must shrink to fit the 256 KiB budget, and a
    // partial batch waiting for the next piece must not block its dispatch.
    Prefetcher p(o);
    CHECK_OK(p.Start());
    CHECK(p.Enqueue({f, 0, 20000}).ok());
    p.EndInput();
    Item item;
    uint64_t largest_batch = 0;
    uint64_t records = 0;
    for (int i = 0;; ++i) {
      // A slow consumer now and then: the ring fills up and the threads must stop.
      if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      auto s = p.Stats();
      CHECK(s.buffered_batches <= o.max_buffered_batches);
      const PopResult r = p.Pop(&item, true);
      if (r != PopResult::kItem) break;
      largest_batch = std::max<uint64_t>(largest_batch, item.data.size() + item.bounds.size());
      records += item.records;
    }
    CHECK_EQ(records, 20000u);
    auto s = p.Stats();
    CHECK(s.peak_buffered_bytes <= o.max_buffered_bytes + largest_batch);
    CHECK(s.peak_buffered_batches <= o.max_buffered_batches);
    // It did read ahead (the ring filled while the consumer slept).
    CHECK_EQ(s.peak_buffered_batches, o.max_buffered_batches);
  }
}

TEST(CloseMidStreamStopsThreadsAndFreesEverything) {
  const std::string f = MakeFile("cancel.rio", Compressor::kGzip, 5000, 300, 16 << 10, 6);
  for (int cycle = 0; cycle < 300; ++cycle) {
    PrefetchOptions o;
    o.threads = 1 + cycle % 4;
    o.batch_records = 16;
    o.max_buffered_bytes = 1 << 20;
    Prefetcher p(o);
    CHECK_OK(p.Start());
    for (int r = 0; r < 5; ++r) CHECK(p.Enqueue({f, static_cast<uint64_t>(r) * 100, 4000}).ok());
    Item item;
    for (int i = 0; i < cycle % 7; ++i) CHECK(p.Pop(&item, true) == PopResult::kItem);
    p.Close();
    CHECK(p.Pop(&item, true) == PopResult::kClosed);
    CHECK(!p.Enqueue({f, 0, 1}).ok());
    CHECK_EQ(p.Stats().buffered_bytes, 0u);
    p.Close();  // idempotent
  }
  // A consumer blocked in Pop is woken by Close from another thread.
  PrefetchOptions o;
  o.threads = 2;
  Prefetcher p(o);
  CHECK_OK(p.Start());
  PopResult got = PopResult::kItem;
  std::thread consumer([&] {
    Item item;
    got = p.Pop(&item, true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  p.Close();
  consumer.join();
  CHECK(got == PopResult::kClosed);
}

TEST(AnErrorInOneRangeLosesNoneOfTheOthers) {
  const std::string good = MakeFile("good.rio", Compressor::kSnappy, 1000, 200, 4 << 10, 7);
  const std::vector<Range> ranges = {{good, 0, 500},
                                     {edl::test::GoldenPath("bad-crc-none-64k.rio"), 0, 8192},
                                     {good, 500, 500},
                                     {TempDir() + "/no-such-file.rio", 0, 10},
                                     {edl::test::GoldenPath("truncated-none-64k.rio"), 7000, 1192},
                                     {good, 990, 20},  // outside the file
                                     {good, 0, 1000}};
  for (uint32_t threads : {0u, 1u, 3u}) {
    PrefetchOptions o;
    o.threads = threads;
    o.batch_records = 64;
    Prefetcher p(o);
    CHECK_OK(p.Start());
    for (const auto& r : ranges) CHECK(p.Enqueue(r).ok());
    p.EndInput();
    Drained d = Drain(p, 64, uint64_t{1} << 30, ranges);
    CHECK_EQ(d.errors.size(), 4u);
    if (d.errors.size() != 4u) continue;
    CHECK_EQ(d.errors[0].range_id, 1u);
    CHECK(d.errors[0].error.status.code() == ErrorCode::kChecksum);
    CHECK_EQ(d.errors[0].first_record, 0u);
    CHECK_EQ(d.errors[0].records, 8192u);
    CHECK(d.errors[0].error.status.chunk() >= 0);
    CHECK_EQ(d.errors[1].range_id, 3u);
    CHECK(d.errors[1].error.status.code() == ErrorCode::kIo);
    CHECK_EQ(d.errors[2].range_id, 4u);
    CHECK(d.errors[2].error.status.code() == ErrorCode::kTruncated);
    // Records of the truncated file before the cut are delivered, then the error says where.
    CHECK_EQ(d.errors[2].first_record, 7673u);
    CHECK_EQ(d.errors[2].records, 8192u - 7673u);
    CHECK_EQ(d.errors[3].range_id, 5u);
    CHECK(d.errors[3].error.status.code() == ErrorCode::kOutOfRange);
    // The good ranges are whole.
    size_t good_records = 0;
    for (const auto& line : d.records) {
      if (line.rfind("0#", 0) == 0 || line.rfind("2#", 0) == 0 || line.rfind("6#", 0) == 0) {
        ++good_records;
      }
    }
    CHECK_EQ(good_records, 2000u);
    CHECK_EQ(p.Stats().ranges_done, ranges.size());
  }
}

TEST(SkipModeListsBadChunksWithTheNextBatch) {
  PrefetchOptions o;
  o.threads = 2;
  o.batch_records = 100000;
  o.skip_corrupt = true;
  Prefetcher p(o);
  CHECK_OK(p.Start());
  CHECK(p.Enqueue({edl::test::GoldenPath("bad-crc-none-64k.rio"), 0, 8192}).ok());
  p.EndInput();
  Item item;
  uint64_t records = 0;
  size_t skipped = 0;
  uint64_t skipped_records = 0;
  while (p.Pop(&item, true) == PopResult::kItem) {
    CHECK(item.kind == Item::Kind::kBatch);
    records += item.records;
    for (const auto& f : item.skipped) {
      ++skipped;
      skipped_records += f.records;
      CHECK(f.status.code() == ErrorCode::kChecksum);
    }
  }
  CHECK(skipped >= 1);
  CHECK_EQ(records + skipped_records, 8192u);
}

TEST(RangesEnqueuedWhileConsumingArriveInOrder) {
  const std::string f = MakeFile("live.rio", Compressor::kSnappy, 2000, 100, 2 << 10, 8);
  PrefetchOptions o;
  o.threads = 3;
  o.batch_records = 50;
  o.max_buffered_batches = 4;
  Prefetcher p(o);
  CHECK_OK(p.Start());
  std::thread producer([&] {
    for (uint64_t r = 0; r < 40; ++r) {
      CHECK(p.Enqueue({f, r * 45, 50 + r % 7}).ok());
      if (r % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    p.EndInput();
  });
  Item item;
  uint64_t expect_range = 0;
  uint64_t records = 0;
  uint64_t want = 0;
  for (uint64_t r = 0; r < 40; ++r) want += 50 + r % 7;
  while (p.Pop(&item, true) == PopResult::kItem) {
    CHECK(item.kind == Item::Kind::kBatch);
    CHECK_EQ(item.range_id, expect_range);
    records += item.records;
    if (item.range_done) ++expect_range;
  }
  producer.join();
  CHECK_EQ(expect_range, 40u);
  CHECK_EQ(records, want);
}

namespace {

// Polls the prefetcher's stats until `done` holds (or about 10 s pass: the test then fails).
template <typename Pred>
bool StatsReach(const Prefetcher& p, Pred done) {
  for (int i = 0; i < 1000; ++i) {
    if (done(p.Stats())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

PrefetchOptions TunedOptions(uint32_t threads, uint32_t batch_records, uint64_t max_bytes,
                             uint32_t max_batches, uint64_t piece_bytes) {
  PrefetchOptions o;
  o.threads = threads;
  o.batch_records = batch_records;
  o.max_buffered_bytes = max_bytes;
  o.max_buffered_batches = max_batches;
  o.piece_bytes = piece_bytes;
  return o;
}

}  // namespace

TEST(SetReadAheadParksAndResumesThreads) {
  const std::string f = MakeFile("park.rio", Compressor::kGzip, 4000, 300, 8 << 10, 11);
  PrefetchOptions o;
  o.threads = 4;
  o.batch_records = 32;
  o.max_buffered_bytes = 128 << 10;
  o.piece_bytes = 8 << 10;
  Prefetcher p(o);
  CHECK_OK(p.Start());
  // Clamped to what construction gave: at least 1 thread, at most 4; at most 128 KiB.
  p.SetReadAhead(uint64_t{1} << 40, 0);
  CHECK_EQ(p.Stats().active_threads, 1u);
  CHECK_EQ(p.Stats().max_buffered_bytes, uint64_t{128} << 10);
  CHECK(StatsReach(p, [](const edl::prefetch::PrefetchStats& s) { return s.parked_threads == 3; }));
  const std::vector<Range> ranges = {{f, 0, 4000}};
  CHECK(p.Enqueue(ranges[0]).ok());
  p.EndInput();
  // One thread reads everything while the others stay parked.
  Item item;
  CHECK(p.Pop(&item, true) == PopResult::kItem);
  CHECK_EQ(p.Stats().parked_threads, 3u);
  p.SetReadAhead(uint64_t{128} << 10, 9);
  CHECK_EQ(p.Stats().active_threads, 4u);
  CHECK(StatsReach(p, [](const edl::prefetch::PrefetchStats& s) { return s.parked_threads == 0; }));
  p.SetReadAhead(uint64_t{128} << 10, 2);
  CHECK(StatsReach(p, [](const edl::prefetch::PrefetchStats& s) { return s.parked_threads == 2; }));
  uint64_t records = item.records;
  while (p.Pop(&item, true) == PopResult::kItem) records += item.records;
  CHECK_EQ(records, 4000u);
  // Close wakes parked threads too (join would hang otherwise).
  p.Close();
  CHECK_EQ(p.Stats().parked_threads, 0u);
}

TEST(SetReadAheadLowersAndRaisesTheByteBoundWhileReadsAreQueued) {
  // Stored chunks: estimates are exact, so the bound is strict up to one piece in flight.
  const std::string f = MakeFile("bound.rio", Compressor::kNone, 20000, 400, 16 << 10, 12);
  const PrefetchOptions o = TunedOptions(2, 64, 1 << 20, 1000, 16 << 10);
  Prefetcher p(o);
  CHECK_OK(p.Start());
  CHECK(p.Enqueue({f, 0, 20000}).ok());
  p.EndInput();
  Item item;
  uint64_t records = 0;
  auto pop = [&] {
    CHECK(p.Pop(&item, true) == PopResult::kItem);
    records += item.records;
  };
  // The ring fills to about the full bound.
  CHECK(StatsReach(
      p, [](const edl::prefetch::PrefetchStats& s) { return s.buffered_bytes > (600u << 10); }));
  // Lowered: what is read stays, nothing new starts until the consumer drains below the bound.
  const uint64_t low = 64 << 10;
  p.SetReadAhead(low, 2);
  while (p.Stats().buffered_bytes > low) pop();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const uint64_t piece_max = (16 << 10) + 64 * 8 + (64 << 10);  // a piece, its bounds, a batch
  CHECK(p.Stats().buffered_bytes <= low + piece_max);
  // Raised: the threads read ahead again up to the new bound.
  p.SetReadAhead(512 << 10, 2);
  CHECK(StatsReach(p, [&](const edl::prefetch::PrefetchStats& s) {
    return s.buffered_bytes > low + piece_max;
  }));
  while (p.Pop(&item, true) == PopResult::kItem) records += item.records;
  CHECK_EQ(records, 20000u);
}

TEST(SetReadAheadWhileConsumingLosesAndRepeatsNoRecord) {
  const std::vector<std::string> files = {
      MakeFile("tune-gzip.rio", Compressor::kGzip, 3000, 200, 8 << 10, 13),
      MakeFile("tune-none.rio", Compressor::kNone, 3000, 300, 16 << 10, 14)};
  const std::vector<uint64_t> sizes = {3000, 3000};
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const auto ranges = RandomRanges(files, sizes, 16, seed);
    const auto want = Sequential(ranges);
    const PrefetchOptions o = TunedOptions(4, 16, 256 << 10, 16, 8 << 10);
    Prefetcher p(o);
    CHECK_OK(p.Start());
    for (const auto& r : ranges) CHECK(p.Enqueue(r).ok());
    p.EndInput();
    edl::test::Rng rng(seed);
    const Drained d = Drain(p, o.batch_records, o.batch_bytes, ranges, false, [&](size_t i) {
      if (i % 5 == 0) p.SetReadAhead(1 + rng.Below(300 << 10), rng.Below(6));
    });
    CHECK(d.records == want);
    CHECK_EQ(p.Stats().buffered_bytes, 0u);
  }
}

TEST(DecodeCountersCoverEveryDeliveredByte) {
  // The tuner prices a batch at the decoding time per decoded byte: every byte delivered must
  // have been counted once, by the thread that decoded it, whatever the thread count. (A piece
  // may hold a few bytes besides its records' spans: whole chunks are decoded.)
  const std::string f = MakeFile("counted.rio", Compressor::kGzip, 3000, 300, 8 << 10, 15);
  const std::vector<Range> ranges = {{f, 0, 3000}};
  for (uint32_t threads : {1u, 3u}) {
    const PrefetchOptions o = TunedOptions(threads, 32, 256 << 10, 16, 8 << 10);
    Prefetcher p(o);
    CHECK_OK(p.Start());
    CHECK(p.Enqueue(ranges[0]).ok());
    p.EndInput();
    const Drained d = Drain(p, o.batch_records, o.batch_bytes, ranges);
    CHECK(d.records == Sequential(ranges));
    const uint64_t delivered = d.batch_bytes;
    const edl::prefetch::PrefetchStats s = p.Stats();
    CHECK(s.decoded_bytes >= delivered);
    CHECK(s.decoded_bytes <= delivered + delivered / 100);
    CHECK(s.decode_ns > 0);
    CHECK_EQ(s.threads, threads);
    CHECK_EQ(s.active_threads, threads);
  }
}

namespace {

// Consecutive tasks of `task` records over [0, n) of `path`: what a worker's tasks name.
std::vector<Range> Tasks(const std::string& path, uint64_t n, uint64_t task) {
  std::vector<Range> ranges;
  for (uint64_t start = 0; start < n; start += task) {
    ranges.push_back({path, start, std::min(task, n - start)});
  }
  return ranges;
}

FileIndex IndexOf(const std::string& path) {
  auto f = LocalFile::Open(path);
  CHECK_OK(f.status());
  FileIndex index;
  CHECK_OK(ScanIndex(*f.value(), &index));
  return index;
}

size_t ChunkCount(const std::string& path) { return IndexOf(path).chunks.size(); }

// Starts `p`, queues every range and ends the input.
void QueueAll(Prefetcher& p, const std::vector<Range>& ranges) {
  CHECK_OK(p.Start());
  for (const auto& r : ranges) CHECK(p.Enqueue(r).ok());
  p.EndInput();
}

// Whether record `i` is inside a chunk, not its first record (a task starting there shares it).
bool InsideChunk(const FileIndex& index, uint64_t i) {
  for (const ChunkInfo& c : index.chunks) {
    if (i > c.first_record && i < c.first_record + c.header.num_records) return true;
  }
  return false;
}

}  // namespace

TEST(TasksThatCutChunksDecodeEachChunkOnceAndDeliverTheSameRecords) {
  // Chunks of about 40 records; tasks of 17 (a chunk cut by up to 3 tasks, tasks smaller than a
  // chunk), 50 and 1024 (a task ending inside a chunk and the next one starting there).
  struct Case {
    const char* name;
    Compressor compressor;
  };
  for (const Case& c :
       {Case{"carry-none.rio", Compressor::kNone}, Case{"carry-snappy.rio", Compressor::kSnappy},
        Case{"carry-gzip.rio", Compressor::kGzip}}) {
    const uint64_t n = 3000;
    const std::string f = MakeFile(c.name, c.compressor, n, 100, 2 << 10, 21);
    const size_t chunks = ChunkCount(f);
    CHECK(chunks > 50);
    for (uint64_t task : {17u, 50u, 1024u}) {
      const auto ranges = Tasks(f, n, task);
      const auto want = Sequential(ranges);
      for (uint32_t threads : {0u, 1u, 2u, 4u}) {
        for (uint32_t batch : {7u, 64u}) {
          // One chunk per piece (piece_bytes 1): pieces decoded count the chunks decoded.
          Prefetcher p(TunedOptions(threads, batch, 64 << 10, 8, 1));
          QueueAll(p, ranges);
          const Drained d = Drain(p, batch, uint64_t{1} << 30, ranges, batch == 7);
          CHECK(d.records == want);
          const auto s = p.Stats();
          // Every chunk decoded once: a chunk shared by tasks came from the carry.
          CHECK_EQ(s.pieces_decoded, chunks);
          CHECK(s.chunks_carried > 0);
          CHECK_EQ(s.ranges_done, ranges.size());
          CHECK_EQ(s.buffered_bytes, 0u);
        }
      }
    }
  }
}

TEST(RangesOfDifferentFilesInterleavedGiveTheSameRecords) {
  const std::string a = MakeFile("interleave-a.rio", Compressor::kSnappy, 1200, 100, 2 << 10, 22);
  const std::string b = MakeFile("interleave-b.rio", Compressor::kGzip, 900, 100, 2 << 10, 23);
  // a's tasks and b's tasks alternate, and now and then two of a's follow each other.
  std::vector<Range> ranges;
  const auto ta = Tasks(a, 1200, 70);
  const auto tb = Tasks(b, 900, 90);
  for (size_t i = 0; i < ta.size(); ++i) {
    ranges.push_back(ta[i]);
    if (i % 3 != 2 && i < tb.size()) ranges.push_back(tb[i]);
  }
  const auto want = Sequential(ranges);
  for (uint32_t threads : {0u, 1u, 3u}) {
    Prefetcher p(TunedOptions(threads, 32, 64 << 10, 64, 4 << 10));
    QueueAll(p, ranges);
    const Drained d = Drain(p, 32, uint64_t{1} << 30, ranges);
    CHECK(d.records == want);
    CHECK(p.Stats().chunks_carried > 0);  // where two of a's tasks follow each other
    CHECK_EQ(p.Stats().buffered_bytes, 0u);
  }
}

TEST(ACarryKeptWhileNoRangeIsQueuedServesTheNextOne) {
  // A consumer that queues the next task only once the previous one is read: the cut chunk waits
  // (counted in the buffered bytes) for the next range, and is freed when the input ends.
  const std::string f = MakeFile("carry-wait.rio", Compressor::kGzip, 1000, 100, 2 << 10, 24);
  const auto ranges = Tasks(f, 1000, 130);
  const auto want = Sequential(ranges);
  for (uint32_t threads : {0u, 2u}) {
    Prefetcher p(TunedOptions(threads, 1000, uint64_t{64} << 20, 64, 1));
    CHECK_OK(p.Start());
    std::vector<std::string> records;
    Item item;
    const FileIndex index = IndexOf(f);
    uint64_t cuts = 0;
    for (size_t r = 0; r < ranges.size(); ++r) {
      CHECK(p.Enqueue(ranges[r]).ok());
      for (bool done = false; !done;) {
        CHECK(p.Pop(&item, true) == PopResult::kItem);
        CHECK(item.kind == Item::Kind::kBatch);
        const auto* b = reinterpret_cast<const uint32_t*>(item.bounds.data());
        for (uint64_t i = 0; i < item.records; ++i) {
          records.push_back(RecordLine(r, item.first_record + i, item.data.data() + b[2 * i],
                                       b[2 * i + 1] - b[2 * i]));
        }
        done = item.range_done;
      }
      // The cut chunk is still held.
      const uint64_t end = ranges[r].start + ranges[r].count;
      if (r + 1 < ranges.size() && InsideChunk(index, end)) {
        CHECK(p.Stats().buffered_bytes > 0);
        ++cuts;
      }
    }
    p.EndInput();
    CHECK(p.Pop(&item, true) == PopResult::kEnded);
    CHECK(records == want);
    const auto s = p.Stats();
    CHECK(cuts > 3);
    CHECK_EQ(s.chunks_carried, cuts);
    CHECK_EQ(s.pieces_decoded, ChunkCount(f));
    CHECK_EQ(s.buffered_bytes, 0u);
  }
}

TEST(ARangeAfterOneThatFailedDecodesTheSharedChunkItself) {
  // Tasks over a file with a bad chunk: the task that meets it ends with the error and leaves no
  // carry; the next task, which starts in the chunk the failed one ended in, still gets all its
  // records (the chunk decoded again), like sequential reads.
  const std::string bad = edl::test::GoldenPath("bad-crc-none-64k.rio");
  for (uint64_t task : {100u, 1000u}) {
    const auto ranges = Tasks(bad, 8192, task);
    const auto want = Sequential(ranges);
    for (uint32_t threads : {0u, 1u, 3u}) {
      Prefetcher p(TunedOptions(threads, 64, uint64_t{64} << 20, 64, 1));
      QueueAll(p, ranges);
      const Drained d = Drain(p, 64, uint64_t{1} << 30, ranges);
      CHECK(d.records == want);
      CHECK(!d.errors.empty());
      // Every chunk holds over 500 records: tasks of 100 start inside the bad one several times,
      // and each of those decodes it again (one chunk per piece).
      if (task == 100) CHECK(p.Stats().pieces_decoded > ChunkCount(bad));
      CHECK_EQ(p.Stats().buffered_bytes, 0u);
    }
  }
}
