# Uses ccache when present. PCH-compatible settings: gcc's precompiled header
# is only reused when ccache ignores its timestamps and defines.
find_program(TORCHBENCH_CCACHE ccache)
if(TORCHBENCH_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER
      "${CMAKE_COMMAND};-E;env;CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;${TORCHBENCH_CCACHE}")
  message(STATUS "TorchBench: compiling through ccache (${TORCHBENCH_CCACHE})")
endif()
