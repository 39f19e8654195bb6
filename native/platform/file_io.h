// The operating system's file calls behind one small interface: POSIX file descriptors
// (posix_file_io.cc, Linux and macOS) or Win32 handles (win32_file_io.cc, the mingw-w64 build).
// Errors are the system's own codes, turned into text only when a message is built.
#ifndef EDL_PLATFORM_FILE_IO_H_
#define EDL_PLATFORM_FILE_IO_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace edl::platform {

#ifdef _WIN32
/// A Win32 HANDLE (void* there; <windows.h> stays out of every header).
using FileHandle = void*;
#else
/// A file descriptor.
using FileHandle = int;
#endif

/// 0, or why a call failed: errno, or GetLastError() on Windows.
using SysError = int;

/// Opens `path` (UTF-8) for positioned reads; the handle is not inherited by child processes.
SysError OpenForReading(const std::string& path, FileHandle* file);

/// Size of an open file, and whether it is a directory (opening one succeeds; reading it must not).
SysError FileSize(FileHandle file, uint64_t* size, bool* is_directory);

/// Tells the system the file will be read front to back (more read-ahead); a no-op where there is
/// no such hint.
void AdviseSequential(FileHandle file);

/// Reads up to `n` bytes at `offset` into `dst`, looping over short reads and interruptions;
/// `*got` < n only at end of file or on error. Safe to call from several threads at once.
SysError ReadAt(FileHandle file, uint64_t offset, void* dst, size_t n, size_t* got);

/// Creates `path` (UTF-8) for writing, truncating a file already there; `permissions` are the POSIX
/// mode bits before the umask (Windows has none to set).
SysError CreateForWriting(const std::string& path, unsigned permissions, FileHandle* file);

/// Appends all `n` bytes at the file's position, looping over short writes; `*written` is what
/// went out, also on error.
SysError WriteAll(FileHandle file, const uint8_t* src, size_t n, size_t* written);

/// Closes `file`; the error a close can report (e.g. a deferred write failure).
SysError CloseFile(FileHandle file);

/// The error that `ErrorText` spells "Is a directory".
SysError IsDirectoryError();

/// Text of a SysError ("No such file or directory"), the same words on every system for the
/// common errors.
std::string ErrorText(SysError err);

}  // namespace edl::platform

#endif  // EDL_PLATFORM_FILE_IO_H_
