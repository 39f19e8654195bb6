// The record index of an uncompressed TFRecord file, from a scan of its headers, and reads of
// record ranges through it.
#ifndef EDL_TFRECORD_TFRECORD_INDEX_H_
#define EDL_TFRECORD_TFRECORD_INDEX_H_

#include <cstdint>
#include <vector>

#include "byte_buffer.h"
#include "file.h"
#include "status.h"

namespace edl::tfrecord {

/// Scans the headers of `file` (in blocks of `block_size` bytes, so many small records cost one
/// read) and sets `offsets` to the byte offset of every record plus the end of the last one:
/// record i spans [offsets[i], offsets[i + 1]). Length CRCs are checked; data CRCs are left to the
/// reads. On a fault (a bad header, a file that ends inside a record) `offsets` still covers every
/// record before it and the status names the fault's byte offset.
recordio::Status ScanIndex(const recordio::RandomAccessFile& file, std::vector<uint64_t>* offsets,
                           size_t block_size = size_t{1} << 20);

/// `count` of DecodeRecords: every whole frame up to the end of the input.
inline constexpr uint64_t kAllRecords = ~uint64_t{0};

/// Decodes the frames of `in[0, n)`, which starts at a frame boundary at stream offset `base`
/// (for error offsets): the first `count` records, or all of them (kAllRecords). Appends each
/// record's [begin, end) within `in` to `bounds`. Both CRCs are checked and lengths are bounded by
/// `max_record_size`. An input that ends inside a frame, or holds fewer than `count` records, is
/// TRUNCATED with the header scan's message at the offset where the frame starts; on any fault the
/// records before it are in `bounds`. Never reads past `n`; `bounds` grows by at most one pair per
/// 16 input bytes, whatever `count` says. `n` must be below 4 GiB (bounds are uint32).
recordio::Status DecodeRecords(const uint8_t* in, size_t n, uint64_t base, uint64_t count,
                               uint64_t max_record_size, std::vector<uint32_t>* bounds);

/// Reads records [start, start + count) given their `offsets` (from ScanIndex): the frames are
/// read into `data` and each record's [begin, end) within it is appended to `bounds`. Both CRCs are
/// checked; on a fault the records before it are in `bounds` and the status has its offset.
recordio::Status ReadRange(const recordio::RandomAccessFile& file,
                           const std::vector<uint64_t>& offsets, uint64_t start, uint64_t count,
                           recordio::ByteBuffer& data, std::vector<uint32_t>* bounds);

}  // namespace edl::tfrecord

#endif  // EDL_TFRECORD_TFRECORD_INDEX_H_
