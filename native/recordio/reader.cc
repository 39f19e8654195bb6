#include "reader.h"

#include <algorithm>
#include <string>

#include "chunk.h"
#include "crc32.h"

namespace edl::recordio {

namespace {

bool StopsEveryMode(ErrorCode code) {
  return code == ErrorCode::kIo || code == ErrorCode::kTooLarge;
}

class RangeReader {
 public:
  RangeReader(const RandomAccessFile& file, const FileIndex& index, uint64_t max_bytes,
              ReadOutput* out)
      : file_(file), index_(index), max_bytes_(max_bytes), out_(out) {}

  // Decodes chunk `c` into out_->data and emits the bounds of its records [skip, skip + take).
  Status ReadChunk(size_t c, uint32_t skip, uint32_t take) {
    const ChunkInfo& info = index_.chunks[c];
    const ChunkHeader& h = info.header;
    if (!IsKnownCompressor(h.compressor)) {
      return Status(ErrorCode::kUnknownCompressor,
                    "unknown compressor " + std::to_string(h.compressor));
    }
    const uint64_t payload_at = info.offset + kHeaderSize;
    const uint64_t size = h.compressed_size;
    if (payload_at > index_.file_size || size > index_.file_size - payload_at) {
      return Status(
          ErrorCode::kTruncated,
          "chunk payload of " + std::to_string(size) + " bytes is cut short: the file ends " +
              std::to_string(index_.file_size > payload_at ? index_.file_size - payload_at : 0) +
              " bytes after the header");
    }
    ByteBuffer& data = out_->data;
    const size_t base = data.size();
    const uint64_t room = base < max_bytes_ ? max_bytes_ - base : 0;
    const uint8_t* decoded;
    size_t n;
    if (h.compressor == static_cast<uint32_t>(Compressor::kNone)) {
      // Stored chunks go from the page cache (or the caller's memory) straight into the output.
      if (size > room) return TooLarge();
      if (!data.EnsureSpare(size)) return TooLarge();
      Status s = ReadPayload(payload_at, data.end(), size);
      if (!s.ok()) return s;
      s = CheckPayloadCrc(h, data.end());
      if (!s.ok()) return Status(s.code(), s.message());
      decoded = data.end();
      n = size;
    } else {
      const uint8_t* payload = nullptr;
      Status s = CompressedPayload(payload_at, size, &payload);
      if (!s.ok()) return s;
      s = CheckPayloadCrc(h, payload);
      if (!s.ok()) return Status(s.code(), s.message());
      s = DecompressPayload(h.compressor, payload, size, data, room);
      // A caller's own limit is named as such, not as the decompressor's output cap.
      if (s.code() == ErrorCode::kTooLarge && max_bytes_ < kMaxDecodedBytes) return TooLarge();
      if (!s.ok()) return s.Shift(static_cast<int64_t>(payload_at));
      // Decompression appended; take the bytes back out of `size` so the split below sees them.
      n = data.size() - base;
      data.SetSize(base);
      decoded = data.end();
    }
    if (h.num_records > n / kLengthPrefixSize) {
      return Status(ErrorCode::kTruncated, "chunk claims " + std::to_string(h.num_records) +
                                               " records but holds only " + std::to_string(n) +
                                               " bytes");
    }
    ByteBuffer& bounds = out_->bounds;
    if (!bounds.EnsureSpare(size_t{take} * 8)) return TooLarge();
    Status s = SplitRecords(decoded, n, h.num_records, skip, take, static_cast<uint32_t>(base),
                            reinterpret_cast<uint32_t*>(bounds.end()));
    if (!s.ok()) {
      // Offsets inside decompressed data mean nothing in the file: report the chunk instead.
      if (h.compressor == static_cast<uint32_t>(Compressor::kNone)) {
        return s.Shift(static_cast<int64_t>(payload_at));
      }
      return Status(s.code(), s.message());
    }
    data.SetSize(base + n);
    bounds.SetSize(bounds.size() + size_t{take} * 8);
    out_->delivered += take;
    return Status::Ok();
  }

 private:
  // Where a compressed payload is decoded from: in place when the file holds its bytes in memory
  // (a range handed over by JavaScript), else read into the scratch buffer.
  Status CompressedPayload(uint64_t at, size_t n, const uint8_t** payload) {
    *payload = file_.View(at, n);
    if (*payload != nullptr) return Status::Ok();
    ByteBuffer& scratch = Scratch();
    if (!scratch.Reserve(n)) return TooLarge();
    Status s = ReadPayload(at, scratch.data(), n);
    if (!s.ok()) return s;
    *payload = scratch.data();
    return Status::Ok();
  }

  Status ReadPayload(uint64_t at, uint8_t* dst, size_t n) {
    size_t got = 0;
    Status s = file_.ReadAt(at, dst, n, &got);
    if (!s.ok()) return s;
    if (got < n) {
      return Status(ErrorCode::kTruncated, "chunk payload is cut short: read " +
                                               std::to_string(got) + " of " + std::to_string(n) +
                                               " bytes");
    }
    return Status::Ok();
  }

  Status TooLarge() const {
    if (max_bytes_ >= kMaxDecodedBytes) {
      return Status(ErrorCode::kTooLarge, "batch exceeds 4 GiB - 1 bytes (or memory is exhausted)");
    }
    return Status(ErrorCode::kTooLarge, "decoded records exceed the limit of " +
                                            std::to_string(max_bytes_) +
                                            " bytes (or memory is exhausted)");
  }

  // Compressed payloads land here before decoding. One per thread and kept between reads: a fresh
  // buffer per read meant a fresh mapping (page faults on every byte of it) whenever the block
  // pool was empty, which it is while JavaScript still holds the previous batches.
  static ByteBuffer& Scratch() {
    thread_local ByteBuffer scratch;
    return scratch;
  }

 public:
  // Lets go of an unusually large scratch buffer, so one huge chunk does not pin its memory.
  static void TrimScratch() {
    ByteBuffer& scratch = Scratch();
    if (scratch.capacity() > kScratchKeepBytes) scratch = ByteBuffer();
  }

 private:
  static constexpr size_t kScratchKeepBytes = size_t{16} << 20;

  const RandomAccessFile& file_;
  const FileIndex& index_;
  const uint64_t max_bytes_;
  ReadOutput* out_;
};

}  // namespace

Status ReadRecords(const RandomAccessFile& file, const FileIndex& index, uint64_t start,
                   uint64_t count, bool skip_corrupt, ReadOutput* out, uint64_t max_bytes) {
  if (max_bytes > kMaxDecodedBytes) max_bytes = kMaxDecodedBytes;
  if (start > index.num_records || count > index.num_records - start) {
    return Status(ErrorCode::kOutOfRange, "records [" + std::to_string(start) + ", " +
                                              std::to_string(start + count) + ") are outside [0, " +
                                              std::to_string(index.num_records) + ")");
  }
  out->first_record = start;
  const uint64_t end = start + count;
  const auto& chunks = index.chunks;
  // First chunk holding record `start` (zero-record chunks before it hold nothing requested).
  // An empty range touches no chunk (and so meets no fault) except the bad tail below.
  size_t first =
      count == 0 ? chunks.size()
                 : static_cast<size_t>(
                       std::partition_point(chunks.begin(), chunks.end(),
                                            [start](const ChunkInfo& c) {
                                              return c.first_record + c.header.num_records <= start;
                                            }) -
                       chunks.begin());

  // One reservation for the whole batch: exact for stored chunks, an estimate otherwise.
  uint64_t data_estimate = 0;
  uint64_t record_estimate = 0;
  bool all_stored = true;  // then the estimate is exact
  for (size_t c = first; c < chunks.size() && chunks[c].first_record < end; ++c) {
    const ChunkInfo& info = chunks[c];
    all_stored = all_stored && info.header.compressor == static_cast<uint32_t>(Compressor::kNone);
    const uint64_t decoded = DecodedEstimate(info, index.file_size);
    data_estimate += decoded;
    const uint64_t lo = std::max(start, info.first_record);
    const uint64_t hi = std::min(end, info.first_record + info.header.num_records);
    // A lying header must not make us reserve more than its payload is likely to hold.
    record_estimate += std::min(hi - lo, decoded / kLengthPrefixSize + 1);
  }
  // Storage handed back for reuse (ByteBuffer::Borrow) is kept even when the estimate exceeds it:
  // for compressed chunks the estimate is a guess (gzip's 4x is far too much for data that does not
  // compress), and abandoning the buffer up front would mean fresh pages for every batch. A batch
  // that really outgrows it moves to a larger owned block once, which is what JavaScript then hands
  // back, so batches of a steady size settle on buffers that fit. (Stored chunks: the estimate is
  // exact, and moving while still empty copies nothing.)
  if (!out->data.borrowed() || all_stored) {
    out->data.Reserve(static_cast<size_t>(std::min(data_estimate, max_bytes)));
  }
  out->bounds.Reserve(static_cast<size_t>(std::min(record_estimate, max_bytes / 4)) * 8);

  RangeReader reader(file, index, max_bytes, out);
  bool stopped = false;
  bool read_last_chunk = false;
  for (size_t c = first; c < chunks.size() && chunks[c].first_record < end; ++c) {
    const ChunkInfo& info = chunks[c];
    read_last_chunk = c + 1 == chunks.size();
    const uint64_t lo = std::max(start, info.first_record);
    const uint64_t hi = std::min(end, info.first_record + info.header.num_records);
    const auto skip = static_cast<uint32_t>(lo - info.first_record);
    const auto take = static_cast<uint32_t>(hi - lo);
    const size_t data_mark = out->data.size();
    const size_t bounds_mark = out->bounds.size();
    Status s = reader.ReadChunk(c, skip, take);
    if (s.ok()) continue;
    out->data.SetSize(data_mark);
    out->bounds.SetSize(bounds_mark);
    s.At(static_cast<int64_t>(c), static_cast<int64_t>(info.offset));
    ChunkFault fault{std::move(s), take};
    if (skip_corrupt && !StopsEveryMode(fault.status.code())) {
      out->skipped.push_back(std::move(fault));
      continue;
    }
    out->has_error = true;
    out->error = std::move(fault);
    stopped = true;
    break;
  }
  RangeReader::TrimScratch();
  // A read that reaches the end of the file also reaches a bad tail the scan stopped at, and a
  // cut last chunk that it did not decode itself (an empty read, or a cut chunk of zero records).
  const Status& at_end = read_last_chunk ? index.tail : EndOfFileFault(index);
  if (!stopped && end == index.num_records && !at_end.ok()) {
    ChunkFault fault{at_end, 0};
    if (skip_corrupt) {
      out->skipped.push_back(std::move(fault));
    } else {
      out->has_error = true;
      out->error = std::move(fault);
    }
  }
  return Status::Ok();
}

}  // namespace edl::recordio
