# Build flags and small helpers shared by every folder.

add_compile_options(-Wall -Wextra -Werror)

# References and views that outlive their owner: gcc's -Wdangling-pointer (on with -Wall) and
# -Wdangling-reference (gcc 13 on); clang's -Wdangling family, which also fires where a
# function's parameter is marked ABSL_ATTRIBUTE_LIFETIME_BOUND and its owner is a temporary.
# Named here so that they stay errors whatever a later flag turns off;
# tests/layout/dangling_warning_test.sh checks that the build refuses such code.
include(CheckCXXCompilerFlag)
set(KUBESTAT_DANGLING_WARNINGS "")
foreach(flag -Wdangling-reference -Wdangling -Wdangling-gsl -Wreturn-stack-address)
  string(MAKE_C_IDENTIFIER "KUBESTAT_CXX_HAS${flag}" has_flag)
  check_cxx_compiler_flag(${flag} ${has_flag})
  if(${has_flag})
    list(APPEND KUBESTAT_DANGLING_WARNINGS ${flag})
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${flag}>)
  endif()
endforeach()

# KUBESTAT_LINKER=lld (or mold, gold): the linker every binary is linked with (-fuse-ld);
# empty, the compiler's default. A missing linker fails the configure step.
set(KUBESTAT_LINKER "" CACHE STRING "The linker to link with (-fuse-ld=<this>); empty: the default")
if(KUBESTAT_LINKER)
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_LINK_OPTIONS -fuse-ld=${KUBESTAT_LINKER})
  check_cxx_source_compiles("int main() { return 0; }" KUBESTAT_LINKER_WORKS_${KUBESTAT_LINKER})
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(NOT KUBESTAT_LINKER_WORKS_${KUBESTAT_LINKER})
    message(FATAL_ERROR "KUBESTAT_LINKER=${KUBESTAT_LINKER}: the compiler cannot link with it")
  endif()
  add_link_options(-fuse-ld=${KUBESTAT_LINKER})
endif()

if(KUBESTAT_ASAN AND KUBESTAT_TSAN)
  message(FATAL_ERROR "KUBESTAT_ASAN and KUBESTAT_TSAN cannot be combined")
endif()
if(KUBESTAT_ASAN)
  # -fno-sanitize=vptr: cpprestsdk's stream buffers are templates instantiated both in our
  # objects and in Debian's uninstrumented libcpprest, whose type info does not match across
  # the shared-library boundary, so UBSan's dynamic-type check misfires inside
  # <cpprest/astreambuf.h> on every request. Every other UBSan check stays on and fatal.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
if(KUBESTAT_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()
if(KUBESTAT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "KUBESTAT_FUZZ needs clang: configure with CC=clang CXX=clang++")
  endif()
  # Libraries get coverage instrumentation; the fuzz executables link the libFuzzer driver.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# kubestat_library(<folder> [LIBS ...]) : one library per folder, named kubestat_<folder>
# with the alias kubestat::<folder>; sources are <folder>/src/*.cc, public headers live in
# <folder>/include/kubestat/<folder>/.
function(kubestat_library folder)
  cmake_parse_arguments(ARG "" "" "PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cc)
  if(NOT sources)
    message(FATAL_ERROR "kubestat: ${folder}/src/ has no .cc file: kubestat::${folder} cannot be built")
  endif()
  add_library(kubestat_${folder} STATIC ${sources})
  add_library(kubestat::${folder} ALIAS kubestat_${folder})
  target_include_directories(kubestat_${folder}
    PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(kubestat_${folder} PUBLIC ${ARG_PUBLIC_LIBS} PRIVATE ${ARG_PRIVATE_LIBS})
endfunction()

include(GoogleTest)

# kubestat_test(<name> SOURCES ... [LIBS ...] [LABEL unit|integration]) : one gtest
# executable; every TEST in it becomes a ctest entry carrying the label.
function(kubestat_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  # A test may include another's helpers by their path under tests/ ("http/raw_client.h").
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} kubestat::testing GTest::gmock GTest::gtest_main)
  # ctest -j starts the costliest tests first (when it has no times of its own from an
  # earlier run, as on a fresh machine): integration tests, which take seconds each, then
  # run beside the many short unit tests instead of after them.
  if(ARG_LABEL STREQUAL "integration")
    set(cost 100)
  else()
    set(cost 1)
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT} COST ${cost})
endfunction()

# kubestat_folder_tests(<folder> [LIBS ...]) : every tests/<folder>/*_test.cc becomes its own
# executable kubestat_<folder>_<file>, linked with kubestat::<folder> and LIBS.
function(kubestat_folder_tests folder)
  cmake_parse_arguments(ARG "" "LABEL" "LIBS" ${ARGN})
  file(GLOB tests CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${folder}/*_test.cc)
  if(NOT tests)
    message(FATAL_ERROR "kubestat: tests/${folder}/ has no *_test.cc file")
  endif()
  foreach(test ${tests})
    get_filename_component(stem ${test} NAME_WE)
    kubestat_test(kubestat_${folder}_${stem} SOURCES ${test}
      LIBS kubestat::${folder} ${ARG_LIBS} LABEL ${ARG_LABEL})
  endforeach()
endfunction()

# kubestat_benchmark(<name> SOURCES ... [LIBS ...]) : a program under bench/ that prints
# figures; registered with ctest under the label "bench", which the default run leaves out.
function(kubestat_benchmark name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;ARGS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  add_test(NAME ${name} COMMAND ${name} ${ARG_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS bench)
endfunction()

# kubestat_fuzzer(<name> SOURCES ... LIBS ...) : a libFuzzer target (KUBESTAT_FUZZ builds only).
function(kubestat_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
endfunction()
