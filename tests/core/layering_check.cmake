# layering_check: fails when a source file includes something its layer must not see
# (DESIGN.md §2): core/ no Qt/LibTorch/libssh; runtime/ no Qt/libssh/sqlite; remote/ no Qt widgets
# or LibTorch; ui/ no libssh, sqlite3 or LibTorch. Run as: cmake -DSOURCE_DIR=... -P layering_check.cmake
set(qt "<Q[A-Za-z]+>|<Qt[A-Za-z]*/")
set(torch "<torch/|<ATen/|<c10/|<c10d/|<cuda|<nccl")
set(ssh "<libssh/")
set(sql "<sqlite3\\.h>")
set(rules
  "core|${qt}|${torch}|${ssh}"
  "runtime|${qt}|${ssh}|${sql}"
  "remote|${qt}|${torch}"
  "ui|${torch}|${ssh}|${sql}")
set(violations "")
foreach(rule IN LISTS rules)
  string(REPLACE "|" ";" parts "${rule}")
  list(POP_FRONT parts layer)
  list(JOIN parts "|" forbidden)
  file(GLOB_RECURSE files "${SOURCE_DIR}/${layer}/*.h" "${SOURCE_DIR}/${layer}/*.hpp" "${SOURCE_DIR}/${layer}/*.cpp" "${SOURCE_DIR}/${layer}/*.cu")
  foreach(f IN LISTS files)
    file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*<")
    foreach(line IN LISTS lines)
      if(line MATCHES "${forbidden}")
        file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
        string(STRIP "${line}" line)
        string(APPEND violations "  ${rel}: ${line}  (${layer}/ must not include this)\n")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "layering violations (see DESIGN.md §2):\n${violations}")
endif()
message(STATUS "layering ok")
