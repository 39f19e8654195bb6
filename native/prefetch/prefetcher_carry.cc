// The chunk a range's end cuts, decoded once: kept when the range ends and handed to the next
// range of the same file that starts in it (see Prefetcher::Carry).
#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "chunk.h"
#include "prefetcher.h"
#include "prefetcher_internal.h"

namespace edl::prefetch {

using recordio::ByteBuffer;
using recordio::ChunkInfo;
using recordio::ReadOutput;

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
  // A carry another piece claimed is never replaced (planning in order makes that impossible;
  // the check keeps it so if that ever changes).
  if (!wanted || (carry_ && carry_->claimed) || !p->error.ok() || p->out.has_error ||
      p->out.delivered == 0 || p->segments.empty() ||
      p->segments.back().first + p->segments.back().second != end ||
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

}  // namespace edl::prefetch
