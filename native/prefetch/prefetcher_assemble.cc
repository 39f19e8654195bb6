// Batches: decoded pieces cut into batches of the configured size, in order, into storage handed
// back by the consumer when some fits.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "format.h"
#include "prefetcher.h"
#include "prefetcher_internal.h"

namespace edl::prefetch {

using recordio::ErrorCode;
using recordio::Status;

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
