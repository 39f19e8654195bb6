#include "prefetcher.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <system_error>
#include <utility>

#include "format.h"
#include "prefetcher_internal.h"

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

uint64_t ItemBytes(const Item& item) { return item.data.size() + item.bounds.size(); }

}  // namespace

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

}  // namespace edl::prefetch
