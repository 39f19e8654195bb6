#include "prefetcher.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <system_error>
#include <utility>

#include "chunk.h"
#include "format.h"

namespace edl::prefetch {

using recordio::ByteBuffer;
using recordio::ChunkInfo;
using recordio::DecodedEstimate;
using recordio::ErrorCode;
using recordio::ReadOutput;
using recordio::Result;
using recordio::Status;

namespace {

// Planned pieces held at once (decoding, decoded or waiting): keeps the bookkeeping bounded even
// when chunks are tiny or empty and the byte budget would allow thousands.
constexpr size_t kMaxPieces = 256;

// Index of the first chunk holding a record >= `record` (chunks without records before it hold
// nothing requested).
size_t FirstChunk(const recordio::FileIndex& index, uint64_t record) {
  return static_cast<size_t>(std::partition_point(index.chunks.begin(), index.chunks.end(),
                                                  [record](const ChunkInfo& c) {
                                                    return c.first_record + c.header.num_records <=
                                                           record;
                                                  }) -
                             index.chunks.begin());
}

uint64_t ItemBytes(const Item& item) { return item.data.size() + item.bounds.size(); }

// Where a range that ended at record `end` (exclusive, > 0) cut a chunk: that chunk's index, and
// whether the cut is inside it (records of the chunk remain after `end`).
bool CutChunk(const recordio::FileIndex& index, uint64_t end, size_t* chunk) {
  if (end == 0) return false;
  const size_t c = FirstChunk(index, end - 1);
  if (c >= index.chunks.size()) return false;
  const ChunkInfo& info = index.chunks[c];
  *chunk = c;
  return end < info.first_record + info.header.num_records;
}

uint64_t NanosSince(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}

}  // namespace

struct Prefetcher::RangeState {
  uint64_t id = 0;
  Range range;
  std::shared_ptr<const OpenFile> file;
  bool opened = false;
  Status open_error;
  uint64_t next = 0;    // next record to plan
  bool failed = false;  // an error item ended it: its remaining pieces are dropped
};

struct Prefetcher::Piece {
  enum class State : uint8_t { kWaiting, kDecoding, kDone };
  std::shared_ptr<RangeState> range;
  uint64_t start = 0;
  uint64_t count = 0;
  bool last = false;  // last piece of its range
  State state = State::kWaiting;
  uint64_t estimate = 0;
  uint64_t accounted = 0;
  Status error;  // a fault before any decoding (open, range outside the file, memory)
  ReadOutput out;
  // File indices of the delivered records: consecutive runs (first, count).
  std::vector<std::pair<uint64_t, uint64_t>> segments;
  // Assembly cursor.
  uint64_t next_record = 0;  // index into out's records
  size_t seg = 0;
  uint64_t seg_pos = 0;
  bool faults_taken = false;
  // Planned to take its records from the carried chunk `carry_chunk` (records from `carry_first`
  // on) instead of decoding it again; `carry_resolved` once Assemble filled it either way.
  bool from_carry = false;
  bool carry_resolved = false;
  size_t carry_chunk = 0;
  uint64_t carry_first = 0;
};

// The decoded chunk a range ended inside, kept for the next range. `data` is the whole decoded
// piece (moving it copies nothing); the chunk's records after the cut start at `tail_begin`.
struct Prefetcher::Carry {
  std::shared_ptr<const OpenFile> file;
  size_t chunk = 0;
  uint64_t first = 0;  // file index of the first record after the cut
  uint64_t end = 0;    // file index one past the chunk's last record
  ByteBuffer data;
  uint32_t tail_begin = 0;
  uint64_t accounted = 0;
  bool claimed = false;  // a planned piece will take it
};

// Reads a piece's records (lock not held); returns the time it took.
uint64_t Prefetcher::ReadPiece(const OpenFile& f, Piece* p, bool skip_corrupt) {
  const auto decode_start = std::chrono::steady_clock::now();
  Status s = recordio::ReadRecords(*f.file, f.index, p->start, p->count, skip_corrupt, &p->out);
  if (!s.ok()) p->error = s;
  // File indices of the delivered records: without skips they run on from the start.
  if (p->out.skipped.empty()) {
    if (p->out.delivered > 0) p->segments.emplace_back(p->start, p->out.delivered);
  } else {
    const uint64_t end = p->start + p->count;
    for (size_t c = FirstChunk(f.index, p->start);
         c < f.index.chunks.size() && f.index.chunks[c].first_record < end; ++c) {
      const ChunkInfo& info = f.index.chunks[c];
      const uint64_t lo = std::max(p->start, info.first_record);
      const uint64_t hi = std::min(end, info.first_record + info.header.num_records);
      if (hi <= lo) continue;
      bool skipped = false;
      for (const auto& fault : p->out.skipped) {
        if (fault.status.chunk() == static_cast<int64_t>(c)) skipped = true;
      }
      if (skipped) continue;
      if (!p->segments.empty() && p->segments.back().first + p->segments.back().second == lo) {
        p->segments.back().second += hi - lo;
      } else {
        p->segments.emplace_back(lo, hi - lo);
      }
    }
  }
  return NanosSince(decode_start);
}

Prefetcher::Prefetcher(const PrefetchOptions& options)
    : options_(options),
      files_(options.max_open_files),
      max_buffered_bytes_(std::max<uint64_t>(options.max_buffered_bytes, 1)),
      active_threads_(options.threads) {
  stats_.threads = options.threads;
  stats_.active_threads = options.threads;
  stats_.max_buffered_bytes = max_buffered_bytes_;
}

void Prefetcher::SetReadAhead(uint64_t bytes, uint32_t active_threads) {
  Lock lock(mu_);
  max_buffered_bytes_ =
      std::clamp<uint64_t>(bytes, 1, std::max<uint64_t>(options_.max_buffered_bytes, 1));
  active_threads_ =
      options_.threads == 0 ? 0 : std::clamp<uint32_t>(active_threads, 1, options_.threads);
  stats_.active_threads = active_threads_;
  stats_.max_buffered_bytes = max_buffered_bytes_;
  // A raised bound or more threads may let work start; parked threads recheck their index.
  park_cv_.notify_all();
  work_cv_.notify_all();
}

Prefetcher::~Prefetcher() { Close(); }

Status Prefetcher::Start() {
  // std::thread reports failure by throwing; nothing is thrown past this function.
  try {
    for (uint32_t i = 0; i < options_.threads; ++i)
      threads_.emplace_back([this, i] { WorkerLoop(i); });
  } catch (const std::system_error& e) {
    Close();
    return Status(ErrorCode::kIo, std::string("cannot start prefetch threads: ") + e.what());
  }
  return Status::Ok();
}

Result<uint64_t> Prefetcher::Enqueue(Range range) {
  // The consumer's thread calls this: it allocates before taking the lock and wakes the threads
  // after releasing it, so that it holds the lock only to queue the range (the threads never hold
  // it while reading, decoding, copying or freeing).
  auto state = std::make_shared<RangeState>();
  state->range = std::move(range);
  state->next = state->range.start;
  Lock lock(mu_);
  if (closed_) return Status(ErrorCode::kClosed, "prefetcher is closed");
  if (input_ended_) return Status(ErrorCode::kClosed, "prefetcher input was ended");
  const uint64_t id = next_range_id_++;
  state->id = id;
  unplanned_.push_back(std::move(state));
  ++stats_.ranges_enqueued;
  if (options_.threads == 0) NotifyConsumer();
  lock.unlock();
  work_cv_.notify_all();
  return id;
}

void Prefetcher::EndInput() {
  Lock lock(mu_);
  input_ended_ = true;
  // No range will come to take a carry nobody claimed.
  std::unique_ptr<Carry> dropped = unplanned_.empty() ? DropCarry() : nullptr;
  work_cv_.notify_all();
  NotifyConsumer();
  lock.unlock();
}

void Prefetcher::SetNotify(std::function<void()> notify) {
  Lock lock(mu_);
  notify_ = std::move(notify);
}

bool Prefetcher::RequestNotify() {
  Lock lock(mu_);
  if (closed_ || !ring_.empty() || EndedLocked()) return true;
  // Without threads, Pop does the work itself: there is something to wait for only when no range
  // is queued.
  if (options_.threads == 0 && (!unplanned_.empty() || !pieces_.empty() || input_ended_)) {
    return true;
  }
  notify_armed_ = true;
  return false;
}

void Prefetcher::NotifyConsumer() {
  consumer_cv_.notify_all();
  if (notify_armed_ && notify_) {
    notify_armed_ = false;
    notify_();
  }
}

PopResult Prefetcher::Pop(Item* out, bool wait) {
  Lock lock(mu_);
  for (;;) {
    if (closed_) return PopResult::kClosed;
    if (!ring_.empty()) {
      *out = std::move(ring_.front());
      ring_.pop_front();
      Account(-static_cast<int64_t>(ItemBytes(*out)));
      stats_.buffered_batches = ring_.size();
      ++stats_.batches_delivered;
      // Refill in bursts: the threads are woken once the ring or the budget is half drained, not
      // at every batch, so that a consumer that keeps up does not pay a context switch per batch.
      if (ring_.size() <= options_.max_buffered_batches / 2 ||
          buffered_bytes_ <= max_buffered_bytes_ / 2) {
        work_cv_.notify_all();
      }
      return PopResult::kItem;
    }
    if (EndedLocked()) return PopResult::kEnded;
    if (options_.threads == 0) {
      if (!DoWork(lock)) return PopResult::kEmpty;
      continue;
    }
    if (!wait) return PopResult::kEmpty;
    consumer_cv_.wait(lock);
  }
}

RecycleResult Prefetcher::Recycle(SpareBlock data, SpareBlock bounds) {
  // Dropped blocks are freed after the lock is released (by their last owner).
  std::vector<SpareBlock> dropped;
  RecycleResult kept;
  Lock lock(mu_);
  const uint64_t max_bytes = std::max<uint64_t>(options_.max_buffered_bytes / 4, 1);
  for (auto* pair : {&data, &bounds}) {
    SpareBlock& b = *pair;
    if (b.p == nullptr || b.cap == 0) continue;
    auto& list = pair == &data ? spare_data_ : spare_bounds_;
    if (closed_ || list.size() >= kMaxSpareBlocks || spare_bytes_ + b.cap > max_bytes) {
      dropped.push_back(std::move(b));
      continue;
    }
    spare_bytes_ += b.cap;
    list.push_back(std::move(b));
    (pair == &data ? kept.data_kept : kept.bounds_kept) = true;
  }
  stats_.spare_blocks = spare_data_.size() + spare_bounds_.size();
  lock.unlock();
  return kept;
}

SpareBlock Prefetcher::TakeSpare(std::vector<SpareBlock>* list, uint64_t want) {
  size_t best = list->size();
  for (size_t i = 0; i < list->size(); ++i) {
    const size_t cap = (*list)[i].cap;
    if (cap >= want && (best == list->size() || cap < (*list)[best].cap)) best = i;
  }
  if (best == list->size()) return SpareBlock();
  SpareBlock b = std::move((*list)[best]);
  (*list)[best] = std::move(list->back());
  list->pop_back();
  spare_bytes_ -= b.cap;
  stats_.spare_blocks = spare_data_.size() + spare_bounds_.size();
  return b;
}

void Prefetcher::Close() {
  {
    Lock lock(mu_);
    closed_ = true;
    work_cv_.notify_all();
    park_cv_.notify_all();
    NotifyConsumer();
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  Lock lock(mu_);
  carry_.reset();
  spare_data_.clear();
  spare_bounds_.clear();
  spare_bytes_ = 0;
  stats_.spare_blocks = 0;
  ring_.clear();
  pieces_.clear();
  assembling_ = false;
  unplanned_.clear();
  cur_ = Item();
  cur_open_ = false;
  next_dispatch_ = 0;
  buffered_bytes_ = 0;
  stats_.buffered_bytes = 0;
  stats_.buffered_batches = 0;
  notify_ = nullptr;
}

PrefetchStats Prefetcher::Stats() const {
  Lock lock(mu_);
  PrefetchStats s = stats_;
  s.buffered_bytes = buffered_bytes_;
  s.open_files = files_.size();
  s.file_opens = files_.opens();
  return s;
}

void Prefetcher::Account(int64_t delta) {
  buffered_bytes_ = static_cast<uint64_t>(static_cast<int64_t>(buffered_bytes_) + delta);
  stats_.peak_buffered_bytes = std::max(stats_.peak_buffered_bytes, buffered_bytes_);
}

bool Prefetcher::EndedLocked() const {
  return input_ended_ && unplanned_.empty() && pieces_.empty() && ring_.empty() && !cur_open_ &&
         !planning_ && !assembling_;
}

void Prefetcher::WorkerLoop(uint32_t index) {
  Lock lock(mu_);
  while (!closed_) {
    if (index >= active_threads_) {
      // Parked by SetReadAhead: it sleeps until it is active again (no wake-ups from work_cv_).
      ++stats_.parked_threads;
      park_cv_.wait(lock, [&] { return closed_ || index < active_threads_; });
      --stats_.parked_threads;
      continue;
    }
    if (DoWork(lock)) continue;
    work_cv_.wait(lock);
  }
}

bool Prefetcher::CanAssemble() const {
  return !assembling_ && !pieces_.empty() && pieces_.front()->state == Piece::State::kDone &&
         (ring_.size() < options_.max_buffered_batches || pieces_.front()->range->failed);
}

bool Prefetcher::DoWork(Lock& lock) {
  if (closed_) return false;
  if (CanAssemble()) {
    Assemble(lock);
    return true;
  }
  // The first piece not yet dispatched may start when the budget has room for its estimate, or
  // when the consumer has drained everything and no other piece is in flight: a piece larger than
  // the room left must still get through, and the partial batch waiting for it must not block it.
  const bool idle = ring_.empty() && next_dispatch_ == 0;
  if (next_dispatch_ < pieces_.size()) {
    Piece* p = pieces_[next_dispatch_].get();
    if (p->state != Piece::State::kWaiting || p->range->failed) {
      // Nothing to decode: a piece planned done (an error or empty range), or one whose range
      // already ended with an error (nothing more of it is delivered).
      ++next_dispatch_;
      p->state = Piece::State::kDone;
      return true;
    }
    if (idle || buffered_bytes_ + p->estimate <= max_buffered_bytes_) {
      ++next_dispatch_;
      Decode(lock, p);
      return true;
    }
    return false;
  }
  if (!planning_ && !unplanned_.empty() && pieces_.size() < kMaxPieces &&
      (idle || buffered_bytes_ < max_buffered_bytes_)) {
    PlanNext(lock);
    return true;
  }
  return false;
}

void Prefetcher::PlanNext(Lock& lock) {
  std::shared_ptr<RangeState> r = unplanned_.front();
  planning_ = true;
  if (!r->opened) {
    lock.unlock();
    auto file = files_.Get(r->range.path);
    lock.lock();
    r->opened = true;
    if (file.ok()) {
      r->file = std::move(file.value());
    } else {
      r->open_error = file.status();
    }
  }
  planning_ = false;
  work_cv_.notify_all();
  if (closed_) return;

  auto piece = std::make_unique<Piece>();
  piece->range = r;
  const Range& range = r->range;
  const uint64_t end = range.start + range.count;
  if (r->failed) {
    unplanned_.pop_front();
    return;
  }
  bool whole = false;  // the piece covers the rest of the range without decoding anything
  if (!r->open_error.ok()) {
    piece->error = r->open_error;
    whole = true;
  } else if (range.start > r->file->index.num_records ||
             range.count > r->file->index.num_records - range.start) {
    piece->error =
        Status(ErrorCode::kOutOfRange, "records [" + std::to_string(range.start) + ", " +
                                           std::to_string(end) + ") are outside [0, " +
                                           std::to_string(r->file->index.num_records) + ")");
    whole = true;
  } else if (range.count == 0) {
    whole = true;
  }
  if (whole) {
    piece->start = range.start;
    piece->count = range.count;
    piece->last = true;
    piece->state = Piece::State::kDone;
    // An empty range that ends the file still reports a damaged tail, like reader.read().
    if (piece->error.ok() && r->file && range.start == r->file->index.num_records &&
        !recordio::EndOfFileFault(r->file->index).ok()) {
      piece->state = Piece::State::kWaiting;
    }
    unplanned_.pop_front();
    pieces_.push_back(std::move(piece));
    work_cv_.notify_all();
    return;
  }
  const auto& index = r->file->index;
  std::unique_ptr<Carry> dropped;  // freed when this function returns, after the lock is released
  if (r->next == range.start && PlanFromCarry(r.get(), piece.get())) {
    r->next = piece->start + piece->count;
    if (r->next >= end) {
      piece->last = true;
      unplanned_.pop_front();
    }
    pieces_.push_back(std::move(piece));
    work_cv_.notify_all();
    return;
  }
  if (r->next == range.start) dropped = DropCarry();  // the range queued next does not use it
  // Consecutive chunks from `next` up to piece_bytes stored bytes and a quarter of the budget
  // decoded (at least one chunk), so that several pieces fit the budget at once.
  const uint64_t max_estimate = std::max<uint64_t>(max_buffered_bytes_ / 4, 1);
  size_t c = FirstChunk(index, r->next);
  uint64_t stored = 0;
  uint64_t estimate = 0;
  uint64_t piece_end = r->next;
  for (; c < index.chunks.size() && index.chunks[c].first_record < end; ++c) {
    const ChunkInfo& info = index.chunks[c];
    const uint64_t decoded = DecodedEstimate(info, index.file_size);
    if (stored > 0 && (stored + info.header.compressed_size > options_.piece_bytes ||
                       estimate + decoded > max_estimate)) {
      break;
    }
    stored += info.header.compressed_size;
    estimate += decoded;
    piece_end = std::min(end, info.first_record + info.header.num_records);
  }
  piece->start = r->next;
  piece->count = piece_end - r->next;
  piece->estimate = estimate + piece->count * 8;
  r->next = piece_end;
  if (piece_end >= end) {
    piece->last = true;
    unplanned_.pop_front();
  }
  pieces_.push_back(std::move(piece));
  work_cv_.notify_all();
  if (dropped) {
    lock.unlock();
    dropped.reset();
    lock.lock();
  }
}

bool Prefetcher::PlanFromCarry(RangeState* r, Piece* piece) {
  const auto& index = r->file->index;
  const uint64_t start = r->range.start;
  const uint64_t end = start + r->range.count;
  size_t chunk = 0;
  uint64_t first = 0;
  Carry* carry = nullptr;
  if (carry_ && !carry_->claimed && carry_->file == r->file && start >= carry_->first &&
      start < carry_->end) {
    carry = carry_.get();
    chunk = carry_->chunk;
    first = carry_->first;
  } else if (!pieces_.empty()) {
    // The previous range's last piece, still to be decoded or assembled: it will leave its cut
    // chunk as the carry (see KeepCarry) just before this piece is assembled.
    const Piece& prev = *pieces_.back();
    const uint64_t prev_end = prev.start + prev.count;
    if (!prev.last || prev.range->file != r->file || prev.range->failed || !prev.error.ok() ||
        prev.count == 0 || start < prev_end || !CutChunk(index, prev_end, &chunk)) {
      return false;
    }
    first = prev_end;
  } else {
    return false;
  }
  const ChunkInfo& info = index.chunks[chunk];
  const uint64_t chunk_end = info.first_record + info.header.num_records;
  if (start >= chunk_end) return false;
  const uint64_t piece_end = std::min(end, chunk_end);
  // A read to the end of the file also reports a damaged tail: that one decodes as before.
  if (piece_end == index.num_records &&
      (!index.tail.ok() || !recordio::EndOfFileFault(index).ok())) {
    return false;
  }
  if (carry != nullptr) carry->claimed = true;
  piece->start = start;
  piece->count = piece_end - start;
  piece->from_carry = true;
  piece->carry_chunk = chunk;
  piece->carry_first = first;
  piece->state = Piece::State::kDone;  // nothing for the threads to decode
  return true;
}

void Prefetcher::ResolveCarry(Lock& lock, Piece* p) {
  p->carry_resolved = true;
  std::unique_ptr<Carry> carry;
  if (carry_ && carry_->file == p->range->file && carry_->chunk == p->carry_chunk &&
      carry_->first == p->carry_first) {
    carry = std::move(carry_);
  }
  const OpenFile& f = *p->range->file;
  if (carry) {
    // The records were checked when the chunk was decoded; this only finds their bounds.
    const auto skip = static_cast<uint32_t>(p->start - carry->first);
    const auto expected = static_cast<uint32_t>(carry->end - carry->first);
    const auto take = static_cast<uint32_t>(p->count);
    lock.unlock();
    const auto split_start = std::chrono::steady_clock::now();
    ByteBuffer& data = p->out.data;
    data = std::move(carry->data);
    ByteBuffer& bounds = p->out.bounds;
    bool ok = bounds.EnsureSpare(size_t{take} * 8) &&
              recordio::SplitRecords(data.data() + carry->tail_begin,
                                     data.size() - carry->tail_begin, expected, skip, take,
                                     carry->tail_begin, reinterpret_cast<uint32_t*>(bounds.end()))
                  .ok();
    if (ok) {
      bounds.SetSize(size_t{take} * 8);
      p->out.first_record = p->start;
      p->out.delivered = take;
      p->segments.emplace_back(p->start, take);
    }
    const uint64_t split_ns = NanosSince(split_start);
    lock.lock();
    if (ok) {
      stats_.decode_ns += split_ns;
      stats_.decoded_bytes += bounds.size();
      ++stats_.chunks_carried;
      p->accounted = carry->accounted + bounds.size();
      Account(static_cast<int64_t>(bounds.size()));
      return;
    }
    // Not expected (the chunk was whole when decoded): the piece is read like any other.
    Account(-static_cast<int64_t>(carry->accounted));
    p->out = ReadOutput();
    p->segments.clear();
  }
  // The range before it did not leave the chunk (it failed): decoded here, on the assembling
  // thread, which is where the piece is needed next.
  lock.unlock();
  const uint64_t decode_ns = ReadPiece(f, p, options_.skip_corrupt);
  lock.lock();
  FinishDecode(p, decode_ns);
}

std::unique_ptr<Prefetcher::Carry> Prefetcher::KeepCarry(Piece* p) {
  // Wanted by the piece planned next (which the planning of later ranges must not drop), or kept
  // for a range not planned (or not queued) yet.
  const bool claimed = pieces_.size() > 1 && pieces_[1]->from_carry;
  const bool wanted = claimed || (pieces_.size() == 1 && (!input_ended_ || !unplanned_.empty()));
  const uint64_t end = p->start + p->count;
  size_t chunk = 0;
  if (!wanted || !p->error.ok() || p->out.has_error || p->out.delivered == 0 ||
      p->segments.empty() || p->segments.back().first + p->segments.back().second != end ||
      !CutChunk(p->range->file->index, end, &chunk)) {
    return nullptr;
  }
  const ChunkInfo& info = p->range->file->index.chunks[chunk];
  const auto* b = reinterpret_cast<const uint32_t*>(p->out.bounds.data());
  std::unique_ptr<Carry> old = std::move(carry_);
  if (old) Account(-static_cast<int64_t>(old->accounted));
  carry_ = std::make_unique<Carry>();
  carry_->file = p->range->file;
  carry_->chunk = chunk;
  carry_->first = end;
  carry_->end = info.first_record + info.header.num_records;
  carry_->tail_begin = b[2 * (p->out.delivered - 1) + 1];
  carry_->data = std::move(p->out.data);
  carry_->claimed = claimed;
  // The whole decoded piece is held, not only the chunk's tail: counted as such.
  carry_->accounted = carry_->data.size();
  Account(static_cast<int64_t>(carry_->accounted) - static_cast<int64_t>(p->accounted));
  p->accounted = 0;
  return old;
}

std::unique_ptr<Prefetcher::Carry> Prefetcher::DropCarry() {
  if (!carry_ || carry_->claimed) return nullptr;
  Account(-static_cast<int64_t>(carry_->accounted));
  return std::move(carry_);
}

void Prefetcher::Decode(Lock& lock, Piece* p) {
  p->state = Piece::State::kDecoding;
  Account(static_cast<int64_t>(p->estimate));
  const OpenFile& f = *p->range->file;
  lock.unlock();
  const uint64_t decode_ns = ReadPiece(f, p, options_.skip_corrupt);
  lock.lock();
  FinishDecode(p, decode_ns);
  p->state = Piece::State::kDone;
  work_cv_.notify_all();
}

void Prefetcher::FinishDecode(Piece* p, uint64_t decode_ns) {
  stats_.decode_ns += decode_ns;
  p->accounted = p->out.data.size() + p->out.bounds.size();
  stats_.decoded_bytes += p->accounted;
  Account(static_cast<int64_t>(p->accounted) - static_cast<int64_t>(p->estimate));
  ++stats_.pieces_decoded;
}

void Prefetcher::PushItem(Item item) {
  // Batch bytes were counted as they moved out of their pieces (see Assemble).
  if (item.range_done) ++stats_.ranges_done;
  ring_.push_back(std::move(item));
  stats_.buffered_batches = ring_.size();
  stats_.peak_buffered_batches = std::max<uint64_t>(stats_.peak_buffered_batches, ring_.size());
  NotifyConsumer();
}

void Prefetcher::FlushBatch(bool range_done) {
  cur_.range_done = range_done;
  PushItem(std::move(cur_));
  cur_ = Item();
  cur_open_ = false;
  cur_record_bytes_ = 0;
}

void Prefetcher::Assemble(Lock& lock) {
  assembling_ = true;
  // Finished pieces and replaced carries are freed after the lock is released: freeing decoded
  // buffers returns pages to the system, which must not hold up Enqueue or Pop.
  std::vector<std::unique_ptr<Piece>> finished;
  std::vector<std::unique_ptr<Carry>> replaced;
  const uint64_t batch_records = std::max<uint32_t>(options_.batch_records, 1);
  while (!closed_ && !pieces_.empty() && pieces_.front()->state == Piece::State::kDone) {
    Piece* p = pieces_.front().get();
    RangeState& r = *p->range;
    if (r.failed) {
      // What is left of a range that ended with an error: dropped (the error said how much).
    } else {
      if (ring_.size() >= options_.max_buffered_batches) break;
      if (p->from_carry && !p->carry_resolved) {
        ResolveCarry(lock, p);
        continue;
      }
      if (!cur_open_) {
        cur_ = Item();
        cur_.range_id = r.id;
        cur_.first_record = p->start;
        cur_open_ = true;
        cur_record_bytes_ = 0;
      }
      if (!p->faults_taken) {
        p->faults_taken = true;
        for (auto& f : p->out.skipped) {
          cur_.skipped.push_back(Fault{std::move(f.status), r.range.path, f.records});
        }
      }
      const uint64_t delivered = p->out.delivered;
      if (p->next_record < delivered) {
        // One run of records for the current batch: consecutive indices, within both limits.
        const auto* b = reinterpret_cast<const uint32_t*>(p->out.bounds.data());
        const uint64_t j0 = p->next_record;
        const uint64_t first_index = p->segments[p->seg].first + p->seg_pos;
        if (cur_.records > 0 && cur_.first_record + cur_.records != first_index) {
          FlushBatch(false);
          continue;
        }
        if (cur_.records >= batch_records) {
          FlushBatch(false);
          continue;
        }
        if (cur_.records == 0) cur_.first_record = first_index;
        uint64_t j1 = j0;
        uint64_t bytes = cur_record_bytes_;
        const uint64_t seg_left = p->segments[p->seg].second - p->seg_pos;
        const uint64_t limit = j0 + std::min(seg_left, batch_records - cur_.records);
        while (j1 < limit) {
          const uint64_t len = b[2 * j1 + 1] - b[2 * j1];
          if (cur_.records + (j1 - j0) > 0 && bytes + len > options_.batch_bytes) break;
          bytes += len;
          ++j1;
        }
        if (j1 == j0) {
          FlushBatch(false);  // the batch is full in bytes
          continue;
        }
        const uint32_t src_begin = b[2 * j0];
        const uint32_t src_end = b[2 * (j1 - 1) + 1];
        const uint64_t span = src_end - src_begin;
        if (cur_.data.size() + span > recordio::kMaxDecodedBytes && cur_.records > 0) {
          FlushBatch(false);
          continue;
        }
        // A new batch gets one block for its bytes, sized from the piece's mean record (the
        // limit caps it), and one for its bounds: storage handed back by the consumer when some
        // is large enough, else one allocation each.
        const bool fresh = cur_.records == 0 && cur_.data.capacity() == 0 && delivered > 0;
        uint64_t want_data = 0;
        const uint64_t want_bounds = batch_records * 8;
        SpareBlock spare_data;
        SpareBlock spare_bounds;
        if (fresh) {
          // The piece's data may hold more than its records (whole chunks are decoded): the mean
          // comes from the span of the records themselves.
          const uint64_t first_begin = b[0];
          const uint64_t last_end = b[2 * (delivered - 1) + 1];
          const uint64_t mean =
              (last_end > first_begin ? last_end - first_begin : p->out.data.size()) / delivered +
              1;
          want_data = std::min<uint64_t>(
              std::min<uint64_t>(mean * batch_records, options_.batch_bytes + batch_records * 4),
              uint64_t{1} << 30);
          spare_data = TakeSpare(&spare_data_, want_data);
          spare_bounds = TakeSpare(&spare_bounds_, want_bounds);
          if (spare_data.p != nullptr) ++stats_.batches_recycled;
        }
        // Copy outside the lock: the front piece and the batch being built are ours alone.
        lock.unlock();
        if (fresh) {
          if (spare_data.p != nullptr) {
            cur_.data.Borrow(spare_data.p, spare_data.cap);
            cur_.data_owner = std::move(spare_data.owner);
          } else {
            // An eighth more than the estimate: batches of the same kind vary a little in size,
            // and a block that fits only the smallest of them would rarely be reused.
            cur_.data.Reserve(static_cast<size_t>(want_data + want_data / 8));
          }
          if (spare_bounds.p != nullptr) {
            cur_.bounds.Borrow(spare_bounds.p, spare_bounds.cap);
            cur_.bounds_owner = std::move(spare_bounds.owner);
          } else {
            cur_.bounds.Reserve(static_cast<size_t>(want_bounds));
          }
        }
        const size_t base = cur_.data.size();
        bool ok = cur_.data.Append(p->out.data.data() + src_begin, span) &&
                  cur_.bounds.EnsureSpare((j1 - j0) * 8);
        if (ok) {
          auto* dst = reinterpret_cast<uint32_t*>(cur_.bounds.end());
          const uint32_t shift = static_cast<uint32_t>(base) - src_begin;  // modular on purpose
          for (uint64_t j = j0; j < j1; ++j) {
            *dst++ = b[2 * j] + shift;
            *dst++ = b[2 * j + 1] + shift;
          }
          cur_.bounds.SetSize(cur_.bounds.size() + (j1 - j0) * 8);
        }
        lock.lock();
        if (!ok) {
          p->error = Status(ErrorCode::kTooLarge, "out of memory assembling a batch");
          p->out.delivered = p->next_record;
          p->out.has_error = false;
          continue;
        }
        // The bytes move from the piece to the batch: still buffered, counted once.
        const uint64_t moved = span + (j1 - j0) * 8;
        const uint64_t released = std::min(moved, p->accounted);
        p->accounted -= released;
        Account(static_cast<int64_t>(moved) - static_cast<int64_t>(released));
        cur_.records += j1 - j0;
        cur_record_bytes_ = bytes;
        p->next_record = j1;
        p->seg_pos += j1 - j0;
        if (p->seg_pos == p->segments[p->seg].second) {
          ++p->seg;
          p->seg_pos = 0;
        }
        continue;
      }
      // Every delivered record of the piece is in a batch: the piece ends here.
      const bool failed = !p->error.ok() || p->out.has_error;
      if (failed) {
        Status s = p->error.ok() ? p->out.error.status : p->error;
        if (cur_.records > 0 || !cur_.skipped.empty()) FlushBatch(false);
        Item e;
        e.kind = Item::Kind::kError;
        e.range_id = r.id;
        e.first_record = p->start + p->next_record;
        const uint64_t range_end = r.range.start + r.range.count;
        e.records = range_end > e.first_record ? range_end - e.first_record : 0;
        e.range_done = true;
        e.error = Fault{std::move(s), r.range.path, e.records};
        cur_ = Item();
        cur_open_ = false;
        PushItem(std::move(e));
        r.failed = true;
      } else if (p->last) {
        if (cur_.records == 0) cur_.first_record = r.range.start + r.range.count;
        FlushBatch(true);
        std::unique_ptr<Carry> old = KeepCarry(p);
        if (old) replaced.push_back(std::move(old));
      }
    }
    Account(-static_cast<int64_t>(p->accounted));
    finished.push_back(std::move(pieces_.front()));
    pieces_.pop_front();
    if (next_dispatch_ > 0) --next_dispatch_;
  }
  assembling_ = false;
  work_cv_.notify_all();
  if (EndedLocked()) NotifyConsumer();
  if (!finished.empty() || !replaced.empty()) {
    lock.unlock();
    finished.clear();
    replaced.clear();
    lock.lock();
  }
}

}  // namespace edl::prefetch
