# CMake toolchain for cross-compiling the addon to win32-x64-gnu on an x86-64 Debian 12 host with
# Debian's mingw-w64 (g++-mingw-w64-x86-64-posix: GCC 12, the msvcrt C runtime, the posix thread
# model that std::thread and std::mutex need). Used by scripts/build-win32-x64.sh through cmake-js;
# see that script for the whole build, and native/platform/mingw-addon.cmake for the import library
# of node.exe and the static runtime.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_DLLTOOL x86_64-w64-mingw32-dlltool)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
# Programs (cmake, node) come from the host; libraries and headers from the target.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
