# Finds MLIR/LLVM 19 and arranges for Sol's tools to link them statically.
#
# Debian builds the MLIR static libraries against the shared libLLVM.so.19.1:
# every imported MLIR target lists the `LLVM` dylib in its
# INTERFACE_LINK_LIBRARIES. Tools must run on machines without LLVM (the GPU
# machines), so we replace that item by LLVM's static component libraries.

find_package(MLIR REQUIRED CONFIG
  HINTS /usr/lib/llvm-19/lib/cmake/mlir)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "Sol needs MLIR/LLVM 19, found ${LLVM_PACKAGE_VERSION} (run scripts/setup)")
endif()
message(STATUS "Using MLIRConfig.cmake in: ${MLIR_DIR}")
message(STATUS "Using LLVMConfig.cmake in: ${LLVM_DIR}")

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})
include(TableGen)
include(AddLLVM)
include(AddMLIR)

include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
separate_arguments(SOL_LLVM_DEFINITIONS NATIVE_COMMAND ${LLVM_DEFINITIONS})
add_definitions(${SOL_LLVM_DEFINITIONS})
# LLVM headers trigger these; they are not ours to fix.
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-deprecated-declarations>)

# Static LLVM components the MLIR libraries we use depend on.
llvm_map_components_to_libnames(SOL_LLVM_STATIC_LIBS
  Support Demangle TableGen TargetParser BinaryFormat Core Remarks
  BitstreamReader)

get_property(_sol_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
foreach(_lib ${MLIR_ALL_LIBS} ${MLIR_LIBS})
  if(TARGET ${_lib})
    get_target_property(_links ${_lib} INTERFACE_LINK_LIBRARIES)
    if(_links)
      list(TRANSFORM _links REPLACE "^LLVM$" "${SOL_LLVM_STATIC_LIBS}")
      set_target_properties(${_lib} PROPERTIES INTERFACE_LINK_LIBRARIES "${_links}")
    endif()
  endif()
endforeach()

# Catch-all for every imported MLIR target (MLIR_ALL_LIBS may not list all).
file(STRINGS ${MLIR_CMAKE_DIR}/MLIRTargets.cmake _sol_target_lines
     REGEX "^add_library\\(MLIR[A-Za-z0-9_]+ STATIC IMPORTED\\)")
foreach(_line ${_sol_target_lines})
  string(REGEX REPLACE "^add_library\\(([A-Za-z0-9_]+) .*" "\\1" _t "${_line}")
  if(TARGET ${_t})
    get_target_property(_links ${_t} INTERFACE_LINK_LIBRARIES)
    if(_links)
      list(TRANSFORM _links REPLACE "^LLVM$" "${SOL_LLVM_STATIC_LIBS}")
      set_target_properties(${_t} PROPERTIES INTERFACE_LINK_LIBRARIES "${_links}")
    endif()
  endif()
endforeach()

# lit / FileCheck from llvm-19-tools.
find_program(SOL_FILECHECK FileCheck HINTS ${LLVM_TOOLS_BINARY_DIR} REQUIRED)
find_program(SOL_LIT_PY lit.py HINTS /usr/lib/llvm-19/build/utils/lit REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
