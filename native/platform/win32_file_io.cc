// Win32 file calls (the mingw-w64 win32-x64 build): CreateFileW on UTF-16 paths, ReadFile with an
// OVERLAPPED offset as pread, WriteFile, CloseHandle.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <cstring>

#include "file_io.h"

namespace edl::platform {

namespace {

// One ReadFile/WriteFile moves at most a DWORD of bytes; 1 GiB per call, as on Linux.
constexpr size_t kMaxTransfer = size_t{1} << 30;

// UTF-8 to the UTF-16 that the W calls take. False for text that is not UTF-8 (or too long).
bool Widen(const std::string& utf8, std::wstring* wide) {
  if (utf8.empty()) {
    wide->clear();
    return true;
  }
  if (utf8.size() > static_cast<size_t>(INT32_MAX)) return false;
  const int in = static_cast<int>(utf8.size());
  const int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8.data(), in, nullptr, 0);
  if (n <= 0) return false;
  wide->assign(static_cast<size_t>(n), L'\0');
  return MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8.data(), in, wide->data(), n) == n;
}

SysError LastError() { return static_cast<SysError>(GetLastError()); }

}  // namespace

SysError OpenForReading(const std::string& path, FileHandle* file) {
  std::wstring wide;
  if (!Widen(path, &wide) || wide.find(L'\0') != std::wstring::npos) return ERROR_INVALID_NAME;
  // Others may read, write, rename or delete the file meanwhile, as POSIX allows. Backup semantics
  // let a directory open, so that FileSize reports it as one.
  HANDLE h = CreateFileW(
      wide.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
      OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_BACKUP_SEMANTICS, nullptr);
  if (h == INVALID_HANDLE_VALUE) return LastError();
  *file = h;
  return 0;
}

SysError FileSize(FileHandle file, uint64_t* size, bool* is_directory) {
  BY_HANDLE_FILE_INFORMATION info;
  if (!GetFileInformationByHandle(file, &info)) return LastError();
  *size = (static_cast<uint64_t>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
  *is_directory = (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0;
  return 0;
}

// Windows takes its read-ahead hint (FILE_FLAG_SEQUENTIAL_SCAN) at open only, and it also makes
// the cache drop pages early, which the chunk cache's re-reads would pay for.
void AdviseSequential(FileHandle file) { (void)file; }

SysError ReadAt(FileHandle file, uint64_t offset, void* dst, size_t n, size_t* got) {
  auto* p = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < n) {
    const size_t want = n - done < kMaxTransfer ? n - done : kMaxTransfer;
    const uint64_t at = offset + done;
    // The offset travels with the call, so threads sharing the handle do not race on its
    // position (the handle is synchronous: the call returns when the bytes are there).
    OVERLAPPED where;
    std::memset(&where, 0, sizeof where);
    where.Offset = static_cast<DWORD>(at & 0xFFFFFFFFu);
    where.OffsetHigh = static_cast<DWORD>(at >> 32);
    DWORD r = 0;
    if (!ReadFile(file, p + done, static_cast<DWORD>(want), &r, &where)) {
      const DWORD err = GetLastError();
      if (err == ERROR_HANDLE_EOF) break;
      *got = done;
      return static_cast<SysError>(err);
    }
    if (r == 0) break;
    done += r;
  }
  *got = done;
  return 0;
}

SysError CreateForWriting(const std::string& path, unsigned permissions, FileHandle* file) {
  (void)permissions;
  std::wstring wide;
  if (!Widen(path, &wide) || wide.find(L'\0') != std::wstring::npos) return ERROR_INVALID_NAME;
  HANDLE h = CreateFileW(wide.c_str(), GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_DELETE, nullptr,
                         CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE) return LastError();
  *file = h;
  return 0;
}

SysError WriteAll(FileHandle file, const uint8_t* src, size_t n, size_t* written) {
  size_t done = 0;
  while (done < n) {
    const size_t want = n - done < kMaxTransfer ? n - done : kMaxTransfer;
    DWORD w = 0;
    if (!WriteFile(file, src + done, static_cast<DWORD>(want), &w, nullptr)) {
      *written = done;
      return LastError();
    }
    done += w;
  }
  *written = done;
  return 0;
}

SysError CloseFile(FileHandle file) { return CloseHandle(file) ? 0 : LastError(); }

SysError IsDirectoryError() { return ERROR_DIRECTORY; }

std::string ErrorText(SysError err) {
  // The words Linux uses for the errors a reader or writer meets most, so that messages (and
  // anything matching them) read the same on every system.
  switch (static_cast<DWORD>(err)) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_DRIVE:
      return "No such file or directory";
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION:
      return "Permission denied";
    case ERROR_DIRECTORY:
      return "Is a directory";
    case ERROR_INVALID_NAME:
      return "Invalid argument";
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL:
      return "No space left on device";
    case ERROR_TOO_MANY_OPEN_FILES:
      return "Too many open files";
    default:
      break;
  }
  char buf[256];
  const DWORD n = FormatMessageA(
      FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, static_cast<DWORD>(err),
      MAKELANGID(LANG_ENGLISH, SUBLANG_ENGLISH_US), buf, sizeof buf, nullptr);
  std::string text(buf, n);
  while (!text.empty() &&
         (text.back() == '\n' || text.back() == '\r' || text.back() == '.' || text.back() == ' '))
    text.pop_back();
  if (text.empty()) return "Windows error " + std::to_string(err);
  return text + " (Windows error " + std::to_string(err) + ")";
}

}  // namespace edl::platform
