# Run by CTest as it starts (the build's TEST_INCLUDE_FILES): lists poslab_tests' GoogleTest cases and adds one CTest
# test per suite, which runs that suite's cases in one process. A failing case is named in the test's output
# ("[  FAILED  ] Suite.Case"), which `ctest --output-on-failure` prints. The CUDA cases of the device-parametrised
# suites (Devices/<Suite>.<Case>/cuda) form one test of their own, "cuda", reported as skipped where this LibTorch or
# this machine has no GPU.
#
# Set by the including file: POSLAB_TESTS (the test program), POSLAB_TEST_TMP (the tests' temporary folder).

if(NOT EXISTS "${POSLAB_TESTS}")
  add_test(poslab_tests_NOT_BUILT "${POSLAB_TESTS}")
  return()
endif()

execute_process(COMMAND "${POSLAB_TESTS}" --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE listing_err RESULT_VARIABLE listing_rc TIMEOUT 120)
if(NOT listing_rc EQUAL 0)
  message(WARNING "${POSLAB_TESTS} --gtest_list_tests failed (${listing_rc}): ${listing_err}")
  add_test(poslab_tests_LISTING_FAILED "${POSLAB_TESTS}" --gtest_list_tests)
  return()
endif()

# Lines "Suite." (or "Prefix/Suite.  # TypeParam ..."), then the suite's cases, indented ("  Case/cuda  # GetParam() ...").
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
set(has_cuda FALSE)
set(suite "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.")
    set(suite "${CMAKE_MATCH_1}")
    set(cpu_${suite} FALSE)
  elseif(line MATCHES "^  ([^ ]+)" AND NOT suite STREQUAL "")
    if(CMAKE_MATCH_1 MATCHES "/cuda$")
      set(has_cuda TRUE)
    elseif(NOT cpu_${suite})
      set(cpu_${suite} TRUE)
      list(APPEND suites "${suite}")
    endif()
  endif()
endforeach()

foreach(suite IN LISTS suites)
  add_test("${suite}" "${POSLAB_TESTS}" "--gtest_filter=${suite}.*-*/cuda")
  set_tests_properties("${suite}" PROPERTIES ENVIRONMENT "POSLAB_TEST_TMP=${POSLAB_TEST_TMP}" SKIP_RETURN_CODE 77)
endforeach()
# The longest suites start first, beside the script tests (CMakeLists.txt): DistTrain starts poslab processes and
# takes ~25 s, Trainer ~10 s. CTest orders a fresh build's tests by COST; later runs by their measured times.
foreach(suite IN ITEMS DistTrain Trainer)
  list(FIND suites "${suite}" found)
  if(found GREATER -1)
    set_tests_properties("${suite}" PROPERTIES COST 50)
  endif()
endforeach()
if(has_cuda)
  add_test(cuda "${POSLAB_TESTS}" "--gtest_filter=*/cuda")
  # without a GPU every case skips (exit 77, test_main.cpp); a case that fails fails the group, GPU or not
  set_tests_properties(cuda PROPERTIES ENVIRONMENT "POSLAB_TEST_TMP=${POSLAB_TEST_TMP}" SKIP_RETURN_CODE 77)
endif()
