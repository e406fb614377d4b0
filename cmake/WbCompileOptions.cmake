# wb_set_warnings(target): the project's warning level, applied per target (no global flags).
function(wb_set_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    # -Wno-missing-field-initializers: aggregates with defaulted trailing members, initialised
    # with the leading ones only (NewRun{...}, LaunchRequest{...}), are this codebase's idiom.
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter
                           -Wno-missing-field-initializers)
    # GCC 12's -Wrestrict false positive inside std::string's operator+ (GCC bug 105329).
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
      target_compile_options(${target} PRIVATE -Wno-restrict)
    endif()
    if(WB_WERROR)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
    if(WB_SANITIZE)
      target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer)
      target_link_options(${target} PRIVATE -fsanitize=address,undefined)
    endif()
  endif()
endfunction()

# wb_unity_build(target batch_size [files_left_out...]): compile `target` in unity batches when
# WB_UNITY_BUILD is on (the default: docs/build.md). Files named after the batch size are compiled
# alone: they hold a file-local helper (anonymous namespace) named like another file's.
option(WB_UNITY_BUILD "Compile libraries in unity batches (one header parse per batch)" ON)
function(wb_unity_build target batch)
  if(NOT WB_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${batch})
  if(ARGN)
    set_source_files_properties(${ARGN} TARGET_DIRECTORY ${target} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()

# The tests' own code compiles without optimisation: -O3 doubles the compile time of a test file
# (docs/build.md: 23.7 → 11.5 s for test_catalog.cpp, parsing is the rest) and a test's time is
# spent in the libraries it calls, which stay optimised. wb_unoptimized_tests() at the top of a
# tests folder; wb_benchmark(target) takes a benchmark of that folder back to the product's
# flags (benchmarks measure, and print tables from their own loops).
option(WB_OPTIMIZE_TESTS "Optimise the test executables' own code like the product's" OFF)
macro(wb_unoptimized_tests)
  if(NOT WB_OPTIMIZE_TESTS AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    add_compile_options(-O0)
  endif()
endmacro()
function(wb_benchmark target)
  get_target_property(options ${target} COMPILE_OPTIONS)
  if(options)
    list(REMOVE_ITEM options -O0)
    set_property(TARGET ${target} PROPERTY COMPILE_OPTIONS ${options})
  endif()
endfunction()
