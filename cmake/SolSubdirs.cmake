# sol_add_all_subdirectories(): add_subdirectory() for every direct child
# folder that has a CMakeLists.txt, in sorted order, so independent areas
# (runtime/tokenizer, runtime/chat, ...) plug in without editing the parent.
# SOL_EXCLUDE_SUBDIRS (source-relative paths) leaves areas out of a build,
# e.g. while one of them is being rewritten.
set(SOL_EXCLUDE_SUBDIRS "" CACHE STRING "Source folders to leave out of the build")
macro(sol_add_all_subdirectories)
  file(GLOB _sol_children LIST_DIRECTORIES true RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}
       ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT _sol_children)
  file(RELATIVE_PATH _sol_here ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  foreach(_child ${_sol_children})
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${_child}
       AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${_child}/CMakeLists.txt
       AND NOT "${_sol_here}/${_child}" IN_LIST SOL_EXCLUDE_SUBDIRS)
      add_subdirectory(${_child})
    endif()
  endforeach()
endmacro()
