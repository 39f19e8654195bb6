#include "status.h"

#include "format.h"

namespace edl::recordio {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "OK";
    case ErrorCode::kIo:
      return "IO";
    case ErrorCode::kBadMagic:
      return "BAD_MAGIC";
    case ErrorCode::kChecksum:
      return "CHECKSUM";
    case ErrorCode::kTruncated:
      return "TRUNCATED";
    case ErrorCode::kBadCompression:
      return "BAD_COMPRESSION";
    case ErrorCode::kUnknownCompressor:
      return "UNKNOWN_COMPRESSOR";
    case ErrorCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case ErrorCode::kTooLarge:
      return "TOO_LARGE";
    case ErrorCode::kClosed:
      return "CLOSED";
  }
  return "UNKNOWN";
}

const char* CompressorName(uint32_t c) {
  switch (c) {
    case 0:
      return "none";
    case 1:
      return "snappy";
    case 2:
      return "gzip";
    default:
      return "unknown";
  }
}

}  // namespace edl::recordio
