# torchbench_set_warnings(<target>): the project's warnings on its own code,
# -Werror with TORCHBENCH_ENABLE_WERROR (the CI preset).
function(torchbench_set_warnings target)
  # Specs are designated initializers naming only what differs from the
  # defaults, which -Wextra's missing-field-initializers would flag.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow=local
                         -Wno-unused-parameter -Wno-missing-field-initializers)
  # GCC 12 at -O3 reports std::string copies it inlined as out of bounds or
  # overlapping (GCC bugs 105651, 105329): which ones depends on what else a
  # unity batch inlines, so -Werror broke on unrelated edits. GCC 13 fixed
  # them.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND
     CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-array-bounds
                           -Wno-stringop-overflow -Wno-restrict)
  endif()
  if(TORCHBENCH_ENABLE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# torchbench_use_pch(<target>): reuses the harness's precompiled LibTorch
# headers; every target that includes torch shares one PCH.
function(torchbench_use_pch target)
  if(TORCHBENCH_ENABLE_PCH)
    target_precompile_headers(${target} REUSE_FROM torchbench_pch)
    # gcc rejects a PCH built with other -fpic/-fpie settings; the PCH is
    # -fPIC (it serves the libraries), so executables compile -fPIC too.
    get_target_property(_tb_type ${target} TYPE)
    if(_tb_type STREQUAL "EXECUTABLE")
      target_compile_options(${target} PRIVATE -fPIC)
    endif()
  endif()
endfunction()
