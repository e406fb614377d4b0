# wb_set_warnings(target): the project's warning level, applied per target (no global flags).
function(wb_set_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
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
