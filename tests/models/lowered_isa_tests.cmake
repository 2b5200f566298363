# Included by CTest (TEST_INCLUDE_FILES, tests/CMakeLists.txt): adds every
# golden and fidelity test of the model test program a second time, as
# lowered_isa.<test>, under the lowest vector kernels LibTorch's libraries
# offer (ATen's default capability, oneDNN, MKL and fbgemm held to AVX2).
# A golden file that only the machine that made it reproduces then fails on
# whatever machine CI runs on (issue: CI on any machine).
#
# Variables (set by the file that includes this one): EXE, ENVIRONMENT (a
# ;-list of NAME=VALUE), REFERENCE_DIR (the fidelity references made under
# the lowered kernels: kept apart from the native run's), TIMEOUT.
if(NOT EXISTS "${EXE}")
  return()
endif()
execute_process(
  COMMAND "${EXE}" --gtest_list_tests
          "--gtest_filter=Registry/GoldenTest.*:Registry/FidelityTest.*"
  OUTPUT_VARIABLE listing RESULT_VARIABLE status TIMEOUT 120)
if(NOT status EQUAL 0)
  add_test(lowered_isa.discovery "${CMAKE_COMMAND}" -E false)
  return()
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(suite "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #]+\\.)")
    set(suite "${CMAKE_MATCH_1}")
  elseif(line MATCHES "^  ([^ #]+)")
    set(name "${suite}${CMAKE_MATCH_1}")
    add_test("lowered_isa.${name}" "${EXE}" "--gtest_filter=${name}")
    set_tests_properties("lowered_isa.${name}" PROPERTIES
      LABELS "models;lowered_isa" TIMEOUT "${TIMEOUT}"
      ENVIRONMENT "${ENVIRONMENT};TORCHBENCH_REFERENCE_DIR=${REFERENCE_DIR}")
  endif()
endforeach()
