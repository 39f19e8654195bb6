// Reads record ranges ahead of a consumer on a pool of threads into a ring of batches bounded in
// bytes and in batches. Output order (and content) depends only on the ranges and the batch
// options, never on the number of threads. A chunk cut by a range's end is decoded once: its
// decoded bytes are carried over to the next range when that range starts in the same chunk.
#ifndef EDL_PREFETCH_PREFETCHER_H_
#define EDL_PREFETCH_PREFETCHER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "byte_buffer.h"
#include "file_cache.h"
#include "reader.h"
#include "status.h"

namespace edl::prefetch {

/// Records [start, start + count) of one file: exactly what a task names.
struct Range {
  std::string path;
  uint64_t start = 0;
  uint64_t count = 0;
};

struct PrefetchOptions {
  /// Decoding threads; 0 decodes on the consumer's thread, inside Pop (no read-ahead).
  uint32_t threads = 2;
  /// Records per batch (the last batch of a range may be shorter).
  uint32_t batch_records = 64;
  /// Most record bytes per batch (length prefixes not counted); a bigger record gets a batch alone.
  uint64_t batch_bytes = uint64_t{64} << 20;
  /// Decoded bytes held ahead of the consumer: ready batches plus decoded (or being decoded)
  /// chunks.
  uint64_t max_buffered_bytes = uint64_t{64} << 20;
  /// Ready batches held ahead of the consumer.
  uint32_t max_buffered_batches = 64;
  /// Consecutive chunks of one range are decoded as one unit of about this many stored bytes, so
  /// that tiny chunks do not cost one hand-off each (a chunk is never split).
  uint64_t piece_bytes = uint64_t{1} << 20;
  /// Skip corrupt chunks (listed with the next batch) instead of ending their range with an error.
  bool skip_corrupt = false;
  /// Open files (descriptor + chunk index) kept for reuse.
  size_t max_open_files = 16;
};

/// A chunk (or file) that could not be delivered.
struct Fault {
  recordio::Status status;
  std::string path;
  uint64_t records = 0;  // requested records it held that were not delivered
};

/// Storage of a delivered batch that the consumer handed back for a later batch to be assembled
/// into. `owner` keeps `p` alive (the consumer may still hold views of it; the memory is freed when
/// the last owner lets go); a batch assembled into it carries `owner` along.
struct SpareBlock {
  uint8_t* p = nullptr;
  size_t cap = 0;
  std::shared_ptr<void> owner;
};

/// Which blocks handed back with Prefetcher::Recycle were kept for later batches.
struct RecycleResult {
  bool data_kept = false;
  bool bounds_kept = false;
};

/// What the consumer receives: a batch, or the error that ended a range.
struct Item {
  enum class Kind : uint8_t { kBatch, kError };
  Kind kind = Kind::kBatch;
  uint64_t range_id = 0;
  /// Batch: file index of its first record (records of a batch have consecutive indices).
  /// Error: file index of the first record of the range that was not delivered.
  uint64_t first_record = 0;
  uint64_t records = 0;
  /// The last item of its range.
  bool range_done = false;
  recordio::ByteBuffer data;    // decoded records (with their length prefixes)
  recordio::ByteBuffer bounds;  // uint32 [begin, end) pairs into data, one per record
  std::vector<Fault> skipped;   // skip mode: chunks passed over before this batch
  Fault error;                  // kError only
  /// Owners of recycled storage that data / bounds were assembled into (while borrowed()).
  std::shared_ptr<void> data_owner;
  std::shared_ptr<void> bounds_owner;
};

enum class PopResult : uint8_t { kItem, kEmpty, kEnded, kClosed };

struct PrefetchStats {
  uint64_t buffered_bytes = 0;  // ready batches + decoded or decoding pieces
  uint64_t peak_buffered_bytes = 0;
  uint64_t buffered_batches = 0;
  uint64_t peak_buffered_batches = 0;
  uint64_t ranges_enqueued = 0;
  uint64_t ranges_done = 0;
  uint64_t batches_delivered = 0;
  uint64_t pieces_decoded = 0;
  uint64_t open_files = 0;
  uint64_t file_opens = 0;
  /// Batches assembled into recycled storage (see Recycle), and spare blocks held now.
  uint64_t batches_recycled = 0;
  uint64_t spare_blocks = 0;
  /// Threads started, and those working now (see SetReadAhead); the read-ahead bound now.
  uint32_t threads = 0;
  uint32_t active_threads = 0;
  /// Threads parked now (above the active count, waiting to be active again).
  uint32_t parked_threads = 0;
  uint64_t max_buffered_bytes = 0;
  /// Time the threads spent reading and decoding pieces, summed over threads, and the bytes
  /// (records and bounds) those pieces came to: their ratio is the decoding time per byte.
  uint64_t decode_ns = 0;
  uint64_t decoded_bytes = 0;
  /// Ranges whose first chunk came from the previous range's decoded chunk (no second decode).
  uint64_t chunks_carried = 0;
};

class Prefetcher {
 public:
  explicit Prefetcher(const PrefetchOptions& options);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /// Starts the threads. Not OK (IO) when the system refuses them.
  recordio::Status Start();

  /// Queues a range; returns its id (0, 1, 2, ... in call order). CLOSED after Close(), and
  /// after EndInput().
  recordio::Result<uint64_t> Enqueue(Range range);
  /// No more ranges: Pop returns kEnded once everything queued was delivered.
  void EndInput();

  /// Takes the next item. wait=false returns kEmpty when none is ready yet; wait=true blocks until
  /// one is (with 0 threads, Pop decodes what it needs itself and never blocks for long).
  PopResult Pop(Item* out, bool wait);

  /// Arms `notify` (set with SetNotify) to be called once, from any thread, when Pop may return
  /// something other than kEmpty. Returns true (and arms nothing) when that is already the case.
  bool RequestNotify();
  void SetNotify(std::function<void()> notify);

  /// Hands back the storage of a delivered batch (either block may be empty): later batches are
  /// assembled into it instead of fresh memory, which would cost page faults and an allocation per
  /// batch. At most kMaxSpareBlocks of each kind, and a quarter of max_buffered_bytes in all, are
  /// kept; the rest is dropped (freed once its other owners let go). Says which of the two were
  /// kept, so that a binding can keep what it holds for a kept block (its JavaScript buffer).
  RecycleResult Recycle(SpareBlock data, SpareBlock bounds);
  /// Enough for a full ring of batches (max_buffered_batches is 64 by default, but the byte bound
  /// usually holds fewer) to come back without any being dropped and allocated again.
  static constexpr size_t kMaxSpareBlocks = 32;

  /// Changes the read-ahead while running, for a tuner: the decoded-bytes bound becomes `bytes`
  /// and `active_threads` of the threads work, each clamped to [1, the value given at
  /// construction] (0 threads stay 0). Threads above the active count park (on a condition
  /// variable) once their current piece is done; nothing queued is lost or read twice. A lower
  /// bound only stops new pieces from starting: what is already decoded stays until consumed.
  void SetReadAhead(uint64_t bytes, uint32_t active_threads);

  /// Stops the threads (joins them) and frees every buffer. Idempotent.
  void Close();

  PrefetchStats Stats() const;

 private:
  struct RangeState;
  struct Piece;
  struct Carry;
  using Lock = std::unique_lock<std::mutex>;

  void WorkerLoop(uint32_t index);
  // One step of work for the calling thread, lock held (released around I/O and decoding).
  // Returns false when there was nothing to do.
  bool DoWork(Lock& lock);
  bool CanAssemble() const;
  bool CanDispatch() const;
  void PlanNext(Lock& lock);
  // Plans the first piece of `range` from the carried chunk, or from the chunk the previous
  // planned piece will leave cut, when the range starts in it. False when it does not.
  bool PlanFromCarry(RangeState* range, Piece* piece);
  void Decode(Lock& lock, Piece* piece);
  // Reads a piece's records (lock not held); returns the time it took.
  static uint64_t ReadPiece(const OpenFile& file, Piece* piece, bool skip_corrupt);
  // Bookkeeping after a piece was read (lock held): its bytes and the time it took.
  void FinishDecode(Piece* piece, uint64_t decode_ns);
  // Fills a piece planned to start in the carried chunk (lock held, released while splitting or,
  // when the carry is gone because the previous range failed, while decoding).
  void ResolveCarry(Lock& lock, Piece* piece);
  // Keeps the cut last chunk of `piece` (its range's last piece, delivered whole) for the next
  // range when one may start in it. Returns the carry it replaced, to be freed without the lock.
  std::unique_ptr<Carry> KeepCarry(Piece* piece);
  // Drops the carry unless a planned piece claimed it; returns it, to be freed without the lock.
  std::unique_ptr<Carry> DropCarry();
  void Assemble(Lock& lock);
  void PushItem(Item item);
  void FlushBatch(bool range_done);
  bool EndedLocked() const;
  void Account(int64_t delta);
  void NotifyConsumer();
  // The smallest spare block of `list` of at least `want` bytes (empty when none), lock held.
  SpareBlock TakeSpare(std::vector<SpareBlock>* list, uint64_t want);

  const PrefetchOptions options_;
  FileCache files_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;      // workers: something to decode or assemble, or close
  std::condition_variable consumer_cv_;  // Pop(wait): an item, the end, or close
  std::condition_variable park_cv_;      // parked workers: active_threads_ raised, or close
  std::vector<std::thread> threads_;
  bool closed_ = false;
  bool input_ended_ = false;
  bool planning_ = false;
  bool assembling_ = false;
  uint64_t next_range_id_ = 0;
  std::deque<std::shared_ptr<RangeState>> unplanned_;  // ranges with pieces still to plan
  std::deque<std::unique_ptr<Piece>> pieces_;          // planned pieces in output order
  size_t next_dispatch_ = 0;                           // first piece not yet decoding
  std::deque<Item> ring_;
  // The decoded chunk the last finished range ended inside (at most one: it serves the range
  // queued right after; counted in buffered_bytes_).
  std::unique_ptr<Carry> carry_;
  // The batch being assembled (owned by the assembling thread while assembling_).
  Item cur_;
  bool cur_open_ = false;
  uint64_t cur_record_bytes_ = 0;
  bool cur_range_emitted_ = false;
  uint64_t buffered_bytes_ = 0;
  // Set by SetReadAhead within options_' values (which are the most the tuner may set).
  uint64_t max_buffered_bytes_;
  uint32_t active_threads_;
  PrefetchStats stats_;
  std::vector<SpareBlock> spare_data_;
  std::vector<SpareBlock> spare_bounds_;
  uint64_t spare_bytes_ = 0;
  std::function<void()> notify_;
  bool notify_armed_ = false;
};

}  // namespace edl::prefetch

#endif  // EDL_PREFETCH_PREFETCHER_H_
