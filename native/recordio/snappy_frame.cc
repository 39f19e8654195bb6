#include "snappy_frame.h"

#include <string>

#include "crc32.h"
#include "format.h"
#include "snappy.h"

namespace edl::recordio {

namespace {

constexpr uint8_t kStreamIdentifier[] = {0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'};
constexpr uint8_t kTypeCompressed = 0x00;
constexpr uint8_t kTypeUncompressed = 0x01;
constexpr uint8_t kTypePadding = 0xfe;
constexpr uint8_t kTypeStreamIdentifier = 0xff;

Status Corrupt(const std::string& what, size_t at) {
  return Status(ErrorCode::kBadCompression, "snappy: " + what, -1, static_cast<int64_t>(at));
}

}  // namespace

Status SnappyFrameDecode(const uint8_t* in, size_t n, ByteBuffer& out, uint64_t max_out) {
  size_t pos = 0;
  uint64_t produced = 0;
  bool seen_identifier = false;
  while (pos < n) {
    if (n - pos < 4) return Corrupt("frame header cut short", pos);
    const uint8_t type = in[pos];
    const size_t len = static_cast<size_t>(in[pos + 1]) | (static_cast<size_t>(in[pos + 2]) << 8) |
                       (static_cast<size_t>(in[pos + 3]) << 16);
    const size_t frame_at = pos;
    const uint8_t* body = in + pos + 4;
    if (len > n - pos - 4) {
      return Corrupt("frame of " + std::to_string(len) + " bytes runs past the payload", frame_at);
    }
    pos += 4 + len;
    if (type == kTypeStreamIdentifier) {
      if (len != 6 || std::memcmp(body, kStreamIdentifier + 4, 6) != 0) {
        return Corrupt("bad stream identifier", frame_at);
      }
      seen_identifier = true;
      continue;
    }
    if (!seen_identifier) return Corrupt("stream does not start with the stream identifier", 0);
    if (type == kTypeCompressed || type == kTypeUncompressed) {
      if (len < 4) return Corrupt("data frame shorter than its checksum", frame_at);
      const uint32_t want = LoadLE32(body);
      const uint8_t* data = body + 4;
      const size_t data_len = len - 4;
      size_t raw_len = data_len;
      if (type == kTypeCompressed) {
        if (!snappy::GetUncompressedLength(reinterpret_cast<const char*>(data), data_len,
                                           &raw_len)) {
          return Corrupt("bad compressed frame length", frame_at);
        }
      }
      if (raw_len > kSnappyMaxFrameData) {
        return Corrupt("frame of " + std::to_string(raw_len) + " bytes exceeds 65536", frame_at);
      }
      if (produced + raw_len > max_out) {
        return Status(ErrorCode::kTooLarge, "snappy: decoded data exceeds the size limit", -1,
                      static_cast<int64_t>(frame_at));
      }
      if (!out.EnsureSpare(raw_len)) {
        return Status(ErrorCode::kTooLarge, "snappy: out of memory", -1,
                      static_cast<int64_t>(frame_at));
      }
      uint8_t* dst = out.end();
      if (type == kTypeCompressed) {
        // An empty frame is only validated: with nothing reserved `dst` may be null, and snappy
        // would still hand it to memcpy for a zero-length literal (found by fuzz_snappy).
        const bool ok =
            raw_len == 0
                ? snappy::IsValidCompressedBuffer(reinterpret_cast<const char*>(data), data_len)
                : snappy::RawUncompress(reinterpret_cast<const char*>(data), data_len,
                                        reinterpret_cast<char*>(dst));
        if (!ok) return Corrupt("corrupt compressed frame", frame_at);
      } else if (raw_len > 0) {
        std::memcpy(dst, data, raw_len);
      }
      const uint32_t got = MaskCrc(Crc32c(dst, raw_len));
      if (got != want) {
        return Status(ErrorCode::kChecksum, "snappy: frame checksum mismatch", -1,
                      static_cast<int64_t>(frame_at));
      }
      out.SetSize(out.size() + raw_len);
      produced += raw_len;
      continue;
    }
    if (type == kTypePadding || type >= 0x80) continue;  // padding and reserved skippable
    return Corrupt("reserved unskippable frame type " + std::to_string(type), frame_at);
  }
  return Status::Ok();
}

bool SnappyFrameEncode(const uint8_t* in, size_t n, ByteBuffer& out) {
  const size_t max_frame = 8 + snappy::MaxCompressedLength(kSnappyMaxFrameData);
  const size_t frames = (n + kSnappyMaxFrameData - 1) / kSnappyMaxFrameData;
  if (!out.EnsureSpare(sizeof(kStreamIdentifier) + frames * max_frame)) return false;
  out.Append(kStreamIdentifier, sizeof(kStreamIdentifier));
  size_t pos = 0;
  while (pos < n) {
    const size_t take = n - pos < kSnappyMaxFrameData ? n - pos : kSnappyMaxFrameData;
    const uint8_t* src = in + pos;
    uint8_t* frame = out.end();
    size_t compressed_len = 0;
    snappy::RawCompress(reinterpret_cast<const char*>(src), take,
                        reinterpret_cast<char*>(frame + 8), &compressed_len);
    uint8_t type = kTypeCompressed;
    size_t body = compressed_len;
    if (compressed_len >= take - take / 8) {
      type = kTypeUncompressed;
      std::memcpy(frame + 8, src, take);
      body = take;
    }
    const size_t len = body + 4;
    frame[0] = type;
    frame[1] = static_cast<uint8_t>(len);
    frame[2] = static_cast<uint8_t>(len >> 8);
    frame[3] = static_cast<uint8_t>(len >> 16);
    StoreLE32(frame + 4, MaskCrc(Crc32c(src, take)));
    out.SetSize(out.size() + 8 + body);
    pos += take;
  }
  return true;
}

}  // namespace edl::recordio
