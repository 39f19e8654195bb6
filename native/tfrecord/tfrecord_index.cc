#include "tfrecord_index.h"

#include <string>

#include "tfrecord_format.h"
#include "tfrecord_frames.h"

namespace edl::tfrecord {

using recordio::ErrorCode;
using recordio::Status;

Status ScanIndex(const recordio::RandomAccessFile& file, std::vector<uint64_t>* offsets,
                 size_t block_size) {
  offsets->clear();
  const uint64_t size = file.Size();
  if (block_size < kHeaderSize) block_size = kHeaderSize;
  std::vector<uint8_t> block(block_size);
  uint64_t block_start = 0;
  size_t block_len = 0;
  uint64_t pos = 0;
  offsets->push_back(0);
  while (pos < size) {
    if (size - pos < kHeaderSize) {
      return Status(ErrorCode::kTruncated,
                    "file ends inside a record header (" + std::to_string(size - pos) + " of " +
                        std::to_string(kHeaderSize) + " bytes)",
                    -1, static_cast<int64_t>(pos));
    }
    if (pos < block_start || pos + kHeaderSize > block_start + block_len) {
      size_t got = 0;
      Status s = file.ReadAt(pos, block.data(), block.size(), &got);
      if (!s.ok()) return s.At(-1, static_cast<int64_t>(pos));
      block_start = pos;
      block_len = got;
      if (got < kHeaderSize) {
        return Status(ErrorCode::kTruncated, "file ends inside a record header", -1,
                      static_cast<int64_t>(pos));
      }
    }
    const uint8_t* h = block.data() + (pos - block_start);
    if (!HeaderValid(h)) {
      return Status(ErrorCode::kChecksum,
                    "record header length CRC mismatch (not a TFRecord file, or corrupt; a "
                    "compressed file cannot be indexed)",
                    -1, static_cast<int64_t>(pos));
    }
    const uint64_t len = LoadU64(h);
    if (len > kMaxRecordSize) {
      return Status(ErrorCode::kTooLarge, "record of " + std::to_string(len) + " bytes", -1,
                    static_cast<int64_t>(pos));
    }
    if (size - pos < kFrameOverhead + len) {
      return Status(ErrorCode::kTruncated,
                    "file ends inside a record of " + std::to_string(len) + " bytes", -1,
                    static_cast<int64_t>(pos));
    }
    pos += kFrameOverhead + len;
    offsets->push_back(pos);
  }
  return Status::Ok();
}

Status ReadRange(const recordio::RandomAccessFile& file, const std::vector<uint64_t>& offsets,
                 uint64_t start, uint64_t count, recordio::ByteBuffer& data,
                 std::vector<uint32_t>* bounds) {
  bounds->clear();
  data.Clear();
  if (offsets.empty() || start > offsets.size() - 1 || count > offsets.size() - 1 - start) {
    return Status(ErrorCode::kOutOfRange,
                  "records [" + std::to_string(start) + ", " + std::to_string(start + count) +
                      ") of " + std::to_string(offsets.empty() ? 0 : offsets.size() - 1));
  }
  if (count == 0) return Status::Ok();
  const uint64_t begin = offsets[start];
  const uint64_t span = offsets[start + count] - begin;
  if (span > UINT32_MAX) {
    return Status(ErrorCode::kTooLarge, "one read of " + std::to_string(span) + " bytes", -1,
                  static_cast<int64_t>(begin));
  }
  if (!data.Reserve(static_cast<size_t>(span))) {
    return Status(ErrorCode::kTooLarge, "out of memory for " + std::to_string(span) + " bytes");
  }
  size_t got = 0;
  Status s = file.ReadAt(begin, data.data(), static_cast<size_t>(span), &got);
  if (!s.ok()) return s.At(-1, static_cast<int64_t>(begin));
  data.SetSize(got);
  return DecodeRecords(data.data(), got, begin, count, kMaxRecordSize, bounds);
}

Status DecodeRecords(const uint8_t* in, size_t n, uint64_t base, uint64_t count,
                     uint64_t max_record_size, std::vector<uint32_t>* bounds) {
  // Every frame takes at least kFrameOverhead bytes: the input bounds the output, not `count`.
  const uint64_t most = n / kFrameOverhead;
  const uint64_t want = count < most ? count : most;
  const size_t first = bounds->size();
  bounds->resize(first + 2 * want);
  DecodeResult r = DecodeFrames(in, n, base, want, bounds->data() + first, true, max_record_size);
  bounds->resize(first + 2 * r.records);
  if (!r.status.ok()) return r.status;
  const size_t left = n - static_cast<size_t>(r.consumed);
  const auto at = static_cast<int64_t>(base + r.consumed);
  if (r.records == count || (count == kAllRecords && left == 0)) return Status::Ok();
  if (left == 0) {
    return Status(ErrorCode::kTruncated,
                  "the range ends after " + std::to_string(r.records) + " of the " +
                      std::to_string(count) + " records asked for",
                  -1, at);
  }
  if (left < kHeaderSize) {
    return Status(ErrorCode::kTruncated,
                  "file ends inside a record header (" + std::to_string(left) + " of " +
                      std::to_string(kHeaderSize) + " bytes)",
                  -1, at);
  }
  return Status(
      ErrorCode::kTruncated,
      "file ends inside a record of " + std::to_string(LoadU64(in + r.consumed)) + " bytes", -1,
      at);
}

}  // namespace edl::tfrecord
