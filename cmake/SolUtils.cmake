# Helpers shared by every CMakeLists.txt of Sol.

# sol_add_gtest(<name> SOURCES <files...> LIBS <targets...> [LABELS <labels...>])
# Builds a GoogleTest executable and registers it with ctest. Tests run from the
# source root so they can read test data (test/...); $SOL_TEST_TOKENIZERS names
# the real tokenizers (test/unit/TestTokenizers.h).
function(sol_add_gtest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/unittests)
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES LABELS "unit;${ARG_LABELS}"
    ENVIRONMENT "SOL_SOURCE_DIR=${PROJECT_SOURCE_DIR};SOL_TEST_TOKENIZERS=${SOL_TEST_TOKENIZERS}")
endfunction()
include(SolSubdirs)
