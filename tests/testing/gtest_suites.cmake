# Included by ctest (TEST_INCLUDE_FILES) with EMB_GTEST_BINARY, EMB_GTEST_LABEL and
# EMB_GTEST_SERIAL set: one ctest test per gtest suite of the binary. A process start costs
# about 0.75 s here (LibTorch's static registrations and 350 shared libraries); paid once per
# suite rather than once per test it is 94 starts for the unit tests instead of 365. gtest's
# own output still names each failing test.
execute_process(COMMAND "${EMB_GTEST_BINARY}" --gtest_list_tests
                OUTPUT_VARIABLE listing RESULT_VARIABLE listed)
if(NOT listed EQUAL 0)
  message(FATAL_ERROR "${EMB_GTEST_BINARY} --gtest_list_tests failed (${listed}): ${listing}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
foreach(line IN LISTS lines)
  # A suite's line starts at column 0 and ends with "." (before a "# GetParam() = ..." note);
  # gtest_main's "Running main() from ..." line does not.
  string(REGEX MATCH "^([^ #]+)\\.( *#.*)?$" suite_line "${line}")
  if(NOT suite_line)
    continue()
  endif()
  set(suite "${CMAKE_MATCH_1}")
  list(FIND EMB_GTEST_SUITES_SEEN "${suite}" seen)  # not IN_LIST: ctest sets no policies
  if(NOT seen EQUAL -1)
    message(FATAL_ERROR "gtest suite ${suite} is in two binaries; rename one (ctest names clash)")
  endif()
  list(APPEND EMB_GTEST_SUITES_SEEN "${suite}")
  add_test("${suite}" "${EMB_GTEST_BINARY}" "--gtest_filter=${suite}.*")
  set_tests_properties("${suite}" PROPERTIES LABELS "${EMB_GTEST_LABEL}"
                       RUN_SERIAL "${EMB_GTEST_SERIAL}" FIXTURES_REQUIRED test_models)
endforeach()
