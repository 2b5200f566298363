# torchbench_set_warnings(<target>): the project's warnings on its own code,
# -Werror with TORCHBENCH_ENABLE_WERROR (the CI preset).
function(torchbench_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow=local
                         -Wno-unused-parameter)
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
