# remat's version from engine/core/version.h (the one place it is written): sets REMAT_VERSION
# ("0.3.0") for project(VERSION). Included before project().
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../engine/core/version.h" remat_version_lines
     REGEX "^#define REMAT_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+ *$")
set(REMAT_VERSION "")
foreach(part MAJOR MINOR PATCH)
  if(NOT remat_version_lines MATCHES "#define REMAT_VERSION_${part} +([0-9]+)")
    message(FATAL_ERROR "remat: engine/core/version.h defines no REMAT_VERSION_${part} number")
  endif()
  list(APPEND REMAT_VERSION "${CMAKE_MATCH_1}")
endforeach()
list(JOIN REMAT_VERSION "." REMAT_VERSION)
unset(remat_version_lines)
