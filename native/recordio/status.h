// Error reporting without exceptions: a code, a message and where in the file it happened.
#ifndef EDL_RECORDIO_STATUS_H_
#define EDL_RECORDIO_STATUS_H_

#include <cstdint>
#include <string>
#include <utility>

namespace edl::recordio {

enum class ErrorCode : uint8_t {
  kOk = 0,
  kIo,
  kBadMagic,
  kChecksum,
  kTruncated,
  kBadCompression,
  kUnknownCompressor,
  kOutOfRange,
  kTooLarge,
  kClosed,
};

/// Stable name of a code, as seen by JavaScript ("IO", "BAD_MAGIC", ...).
const char* ErrorCodeName(ErrorCode code);

/// Result of an operation. `chunk` and `offset` are -1 when they do not apply.
class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message, int64_t chunk = -1, int64_t offset = -1)
      : code_(code), message_(std::move(message)), chunk_(chunk), offset_(offset) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const char* code_name() const { return ErrorCodeName(code_); }
  const std::string& message() const { return message_; }
  int64_t chunk() const { return chunk_; }
  int64_t offset() const { return offset_; }

  /// Turns an offset relative to some base (e.g. a payload) into an absolute one.
  Status& Shift(int64_t base) {
    if (offset_ >= 0) offset_ += base;
    return *this;
  }

  /// Fills in the location when the producer did not know it.
  Status& At(int64_t chunk, int64_t offset) {
    if (chunk_ < 0) chunk_ = chunk;
    if (offset_ < 0) offset_ = offset;
    return *this;
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  int64_t chunk_ = -1;
  int64_t offset_ = -1;
};

/// A value or an error.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { return value_; }
  const T& value() const { return value_; }

 private:
  Status status_;
  T value_{};
};

}  // namespace edl::recordio

#endif  // EDL_RECORDIO_STATUS_H_
