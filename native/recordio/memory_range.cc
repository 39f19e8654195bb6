#include "memory_range.h"

#include <algorithm>
#include <string>

#include "file.h"

namespace edl::recordio {

namespace {

// A fault found in the buffer, in the terms of the file it came from.
Status InFile(const Status& s, const MemoryRangeSpec& spec) {
  return Status(s.code(), s.message(),
                s.chunk() >= 0 ? s.chunk() + static_cast<int64_t>(spec.first_chunk) : -1,
                s.offset() >= 0 ? s.offset() + static_cast<int64_t>(spec.base_offset) : -1);
}

std::string Describe(uint64_t offset, uint64_t first_record, const ChunkHeader& h) {
  return "at byte " + std::to_string(offset) + ", first record " + std::to_string(first_record) +
         ", compressor " + std::to_string(h.compressor) + ", " + std::to_string(h.compressed_size) +
         " bytes, " + std::to_string(h.num_records) + " records";
}

// Holds the chunks scanned from the buffer (offsets and records relative to it) to the chunks the
// caller's index lists, and cuts the scan to them. Chunks the buffer lacks at its end become a
// TRUNCATED tail, unless the scan already stopped at a fault of its own there.
Status Reconcile(const std::vector<ChunkInfo>& expected, const MemoryRangeSpec& spec,
                 FileIndex* index) {
  std::vector<ChunkInfo>& got = index->chunks;
  const size_t common = std::min(expected.size(), got.size());
  for (size_t i = 0; i < common; ++i) {
    const ChunkInfo& e = expected[i];
    const ChunkInfo& g = got[i];
    const bool same = e.offset >= spec.base_offset && e.offset - spec.base_offset == g.offset &&
                      e.first_record >= spec.first_record &&
                      e.first_record - spec.first_record == g.first_record &&
                      e.header.compressor == g.header.compressor &&
                      e.header.compressed_size == g.header.compressed_size &&
                      e.header.num_records == g.header.num_records;
    if (!same) {
      return Status(
          ErrorCode::kBadMagic,
          "the chunk header in memory (" +
              Describe(g.offset + spec.base_offset, g.first_record + spec.first_record, g.header) +
              ") is not the chunk the index lists (" +
              Describe(e.offset, e.first_record, e.header) + ")",
          static_cast<int64_t>(i), static_cast<int64_t>(g.offset));
    }
  }
  if (got.size() > expected.size()) {
    // The buffer runs on past the range; whatever lies there is not this read's concern.
    got.resize(expected.size());
    index->tail = Status::Ok();
    index->truncated_chunk = Status::Ok();
  } else if (got.size() < expected.size() && EndOfFileFault(*index).ok()) {
    const ChunkInfo& next = expected[got.size()];
    index->tail = Status(
        ErrorCode::kTruncated,
        "the range ends at byte " + std::to_string(spec.base_offset + index->file_size) +
            " after " + std::to_string(got.size()) + " of the " + std::to_string(expected.size()) +
            " chunks its index lists",
        static_cast<int64_t>(got.size()), static_cast<int64_t>(next.offset - spec.base_offset));
  }
  index->num_records = got.empty() ? 0 : got.back().first_record + got.back().header.num_records;
  return Status::Ok();
}

// The fault at the end of the buffer's intact chunks (a bad or missing header after them, or the
// last one cut short), when the read met it: the records the index lists past it are not
// delivered either, and are counted there.
ChunkFault* EndFault(const FileIndex& index, ReadOutput* out) {
  ChunkFault* last = out->has_error         ? &out->error
                     : out->skipped.empty() ? nullptr
                                            : &out->skipped.back();
  if (last == nullptr) return nullptr;
  const int64_t chunk = last->status.chunk();
  const bool at_end = chunk == static_cast<int64_t>(index.chunks.size()) ||
                      (!index.truncated_chunk.ok() && chunk == index.truncated_chunk.chunk());
  return at_end ? last : nullptr;
}

// Index of the first delivered record: past the chunks skipped at the start of the read.
uint64_t FirstDelivered(const FileIndex& index, const ReadOutput& out, uint64_t start,
                        uint64_t end) {
  uint64_t first = start;
  size_t k = 0;
  for (size_t c = 0; c < index.chunks.size() && index.chunks[c].first_record < end; ++c) {
    const ChunkInfo& info = index.chunks[c];
    const uint64_t chunk_end = info.first_record + info.header.num_records;
    if (chunk_end <= start) continue;
    if (k >= out.skipped.size() || out.skipped[k].status.chunk() != static_cast<int64_t>(c)) {
      break;
    }
    first = std::min(end, chunk_end);
    ++k;
  }
  return first;
}

}  // namespace

Status DecodeMemoryRange(const uint8_t* data, size_t n, const MemoryRangeSpec& spec,
                         ReadOutput* out) {
  const MemoryFile file(data, n);
  FileIndex index;
  Status s = ScanIndex(file, &index);  // memory never fails to read
  if (!s.ok()) return InFile(s, spec);
  uint64_t listed = index.num_records;
  if (spec.expected != nullptr) {
    s = Reconcile(*spec.expected, spec, &index);
    if (!s.ok()) return InFile(s, spec);
    listed = 0;
    for (const ChunkInfo& c : *spec.expected) listed += c.header.num_records;
  }
  const uint64_t skip = spec.skip;
  const uint64_t count =
      spec.count == MemoryRangeSpec::kAllRecords && skip <= listed ? listed - skip : spec.count;
  if (skip > listed || count > listed - skip) {
    return Status(ErrorCode::kOutOfRange,
                  "records [" + std::to_string(skip) + ", " +
                      (count == MemoryRangeSpec::kAllRecords ? std::string("end")
                                                             : std::to_string(skip + count)) +
                      ") of the range are outside its " + std::to_string(listed) + " records");
  }
  // Records the index lists past the intact part of the buffer: the read stops at the end of what
  // is there, which reports the fault found there (a cut payload, a bad header, a short buffer).
  const uint64_t end = skip + count;
  const uint64_t present_end = std::min(end, index.num_records);
  const uint64_t present_start = std::min(skip, present_end);
  s = ReadRecords(file, index, present_start, present_end - present_start, spec.skip_corrupt, out,
                  spec.max_bytes);
  if (!s.ok()) return InFile(s, spec);
  if (ChunkFault* last = EndFault(index, out); last != nullptr && end > present_end) {
    last->records += end - std::max(skip, present_end);
  }
  out->first_record = spec.first_record + FirstDelivered(index, *out, skip, end);
  for (ChunkFault& f : out->skipped) f.status = InFile(f.status, spec);
  if (out->has_error) out->error.status = InFile(out->error.status, spec);
  return Status::Ok();
}

}  // namespace edl::recordio
