# Written by `qola switch-te`. TransformerEngine includes this file by its QoLA submodule's path
# (3rdparty/QoLA/cmake/QoLA.cmake, by a fixed path or as ${NVTE_QOLA_DIR}/cmake/QoLA.cmake). It
# includes the QoLA.cmake of the qola package installed in the Python TransformerEngine builds
# with (`pip install qola`), so every QoLA function TE calls runs qola. This directory holds no
# `qola` Python package: `python -m qola.cli`, run with 3rdparty/QoLA on PYTHONPATH or as its
# working directory (ck-jit's), imports the installed qola.
if(NOT Python_EXECUTABLE)
  find_package(Python COMPONENTS Interpreter REQUIRED)
endif()
execute_process(
  COMMAND "${Python_EXECUTABLE}" -c "import qola; print(qola.CMAKE_DIR)"
  WORKING_DIRECTORY "${CMAKE_CURRENT_LIST_DIR}"
  RESULT_VARIABLE _qola_forward_status
  OUTPUT_VARIABLE _qola_forward_dir
  ERROR_VARIABLE _qola_forward_error
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _qola_forward_status EQUAL 0 OR NOT EXISTS "${_qola_forward_dir}/QoLA.cmake")
  message(FATAL_ERROR
    "[qola] ${CMAKE_CURRENT_LIST_FILE} forwards to the qola package of ${Python_EXECUTABLE}, "
    "which has none: install it there (`${Python_EXECUTABLE} -m pip install qola`, or the "
    "wheel of a qola checkout). ${_qola_forward_error}")
endif()
include("${_qola_forward_dir}/QoLA.cmake")
