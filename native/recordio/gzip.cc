#include "gzip.h"

#include <memory>
#include <string>

#include "format.h"
#include "libdeflate.h"

namespace edl::recordio {

namespace {

struct DecompressorDeleter {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

// One decompressor per thread: allocating its ~10 KiB of tables for every chunk would show up
// when reading many small chunks.
libdeflate_decompressor* ThreadDecompressor() {
  thread_local std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> d(
      libdeflate_alloc_decompressor());
  return d.get();
}

constexpr size_t kMinGzipMember = 18;  // 10-byte header + empty deflate block + 8-byte trailer

}  // namespace

Status GzipDecode(const uint8_t* in, size_t n, ByteBuffer& out, uint64_t max_out) {
  libdeflate_decompressor* d = ThreadDecompressor();
  if (d == nullptr) return Status(ErrorCode::kTooLarge, "gzip: out of memory");
  if (n < kMinGzipMember) {
    return Status(ErrorCode::kBadCompression,
                  "gzip: payload of " + std::to_string(n) + " bytes is too short for a member", -1,
                  0);
  }
  size_t pos = 0;
  uint64_t produced = 0;
  while (pos < n) {
    const size_t rest = n - pos;
    // Deflate expands at most ~1032:1, so a stream claiming more is corrupt (or hostile).
    const uint64_t ratio_cap = static_cast<uint64_t>(rest) * kMaxGzipRatio + 64;
    const uint64_t budget = max_out - produced;
    const uint64_t cap = ratio_cap < budget ? ratio_cap : budget;
    // ISIZE of the last member is the exact size when there is a single member (the usual case).
    uint64_t avail = LoadLE32(in + n - 4);
    if (avail < rest) avail = rest * 4;
    if (avail < 4096) avail = 4096;
    if (avail > cap) avail = cap;
    for (;;) {
      if (!out.EnsureSpare(static_cast<size_t>(avail))) {
        return Status(ErrorCode::kTooLarge, "gzip: out of memory", -1, static_cast<int64_t>(pos));
      }
      size_t in_used = 0;
      size_t out_used = 0;
      const libdeflate_result r = libdeflate_gzip_decompress_ex(
          d, in + pos, rest, out.end(), static_cast<size_t>(avail), &in_used, &out_used);
      if (r == LIBDEFLATE_SUCCESS) {
        out.SetSize(out.size() + out_used);
        produced += out_used;
        pos += in_used;
        break;
      }
      if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
        if (avail >= cap) {
          if (cap == budget && budget < ratio_cap) {
            return Status(ErrorCode::kTooLarge, "gzip: decoded data exceeds the size limit", -1,
                          static_cast<int64_t>(pos));
          }
          return Status(ErrorCode::kBadCompression,
                        "gzip: member expands beyond the deflate ratio limit", -1,
                        static_cast<int64_t>(pos));
        }
        avail = avail * 2 < cap ? avail * 2 : cap;
        continue;
      }
      return Status(ErrorCode::kBadCompression,
                    pos == 0 ? "gzip: corrupt or truncated member"
                             : "gzip: corrupt or truncated member (or trailing garbage)",
                    -1, static_cast<int64_t>(pos));
    }
  }
  return Status::Ok();
}

GzipEncoder::GzipEncoder(int level)
    : compressor_(libdeflate_alloc_compressor(level < 0 ? 6 : (level > 12 ? 12 : level))) {}

GzipEncoder::~GzipEncoder() {
  if (compressor_ != nullptr) libdeflate_free_compressor(compressor_);
}

bool GzipEncoder::Encode(const uint8_t* in, size_t n, ByteBuffer& out) {
  if (compressor_ == nullptr) return false;
  const size_t bound = libdeflate_gzip_compress_bound(compressor_, n);
  if (!out.EnsureSpare(bound)) return false;
  const size_t written = libdeflate_gzip_compress(compressor_, in, n, out.end(), bound);
  if (written == 0) return false;
  out.SetSize(out.size() + written);
  return true;
}

}  // namespace edl::recordio
