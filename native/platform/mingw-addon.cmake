# The addon as a Windows DLL built by mingw-w64 (win32-x64-gnu, scripts/build-win32-x64.sh),
# included by CMakeLists.txt for target edl_native.
#
# N-API is a C ABI exported by node.exe: the addon imports it through an import library that
# dlltool makes from node-api-headers' list of those exports (def/node_api.def, "NAME NODE.EXE"),
# so no node.lib is downloaded. libstdc++, libgcc and winpthread are linked in statically: the
# .node then needs only KERNEL32.dll, msvcrt.dll (both in every Windows) and node.exe.
if(NOT CMAKE_DLLTOOL)
  find_program(CMAKE_DLLTOOL NAMES x86_64-w64-mingw32-dlltool dlltool REQUIRED)
endif()
execute_process(
  COMMAND node -p "require('node-api-headers').def_paths.node_api_def"
  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
  OUTPUT_VARIABLE EDL_NODE_API_DEF
  OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE EDL_NODE_API_DEF_RESULT)
if(NOT EDL_NODE_API_DEF_RESULT EQUAL 0 OR NOT EXISTS "${EDL_NODE_API_DEF}")
  message(FATAL_ERROR "node-api-headers (def/node_api.def) not found: run pnpm install")
endif()
set(EDL_NODE_API_IMPLIB "${CMAKE_CURRENT_BINARY_DIR}/libnode_api.a")
add_custom_command(
  OUTPUT "${EDL_NODE_API_IMPLIB}"
  COMMAND "${CMAKE_DLLTOOL}" --input-def "${EDL_NODE_API_DEF}" --output-lib "${EDL_NODE_API_IMPLIB}"
          --machine i386:x86-64
  DEPENDS "${EDL_NODE_API_DEF}"
  COMMENT "Import library of node.exe's N-API exports")
add_custom_target(edl_node_api_implib DEPENDS "${EDL_NODE_API_IMPLIB}")
add_dependencies(edl_native edl_node_api_implib)
target_link_libraries(edl_native PRIVATE "${EDL_NODE_API_IMPLIB}")
# -s: the static runtimes bring their debug sections, which would double the size.
target_link_options(edl_native PRIVATE -static -static-libgcc -static-libstdc++ -s)
# A DLL is a "runtime" output: put it where cmake-js looks (build/Release/edl_native.node).
if(CMAKE_LIBRARY_OUTPUT_DIRECTORY)
  set_target_properties(edl_native PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_LIBRARY_OUTPUT_DIRECTORY}")
endif()
