# qola's CMake module: QoLA's functions (cmake/QoLA.cmake of ROCm/QoLA), with the same names,
# arguments and result variables, running qola. A project written against QoLA's module
# switches by installing qola (`pip install qola`) and pointing QOLA_DIR at the installed
# package (python3 -c "import qola, os; print(os.path.dirname(qola.CMAKE_DIR))"), or at
# python/qola of qola's repository:
#
#   include(${QOLA_DIR}/cmake/QoLA.cmake)
#   qola_add_modules(GROUP mha MANIFEST ${CMAKE_CURRENT_SOURCE_DIR}/qola.toml
#                    BUILD_DIR ${CMAKE_CURRENT_BINARY_DIR}/qola ARCHS gfx942 gfx950
#                    OUT_INCLUDE_DIR QOLA_INCLUDE_DIR OUT_LIB_DIR QOLA_LIB_DIR OUT_LIBS QOLA_LIBS)
#
# or in two phases, qola_checkout_aiter(MANIFEST ... AITER_DIR ... GROUPS ... OUT_DIR var) then
# qola_build_modules(GROUP ... MANIFEST ... BUILD_DIR ... AITER_DIR ... ARCHS ... OUT_...).
#
# Unlike QoLA, every configure may run them: a checkout that finds the tree prepared writes
# nothing, and a build with nothing changed compiles nothing and writes nothing (no mtime
# changes, so nothing relinks). The manifest and every patch of the series are configure
# dependencies: editing one configures again.
#
# Which qola runs: QOLA_EXECUTABLE (a CMake variable or the environment), else the `qola` of the
# Python qola_find_python() finds (its scripts directory), else `qola` on PATH.
# The environment's QOLA_AITER_SOURCE_DIR or NVTE_AITER_SOURCE_DIR (a tree to build as it is, no
# checkout; the first set wins) and QOLA_PREBUILT_DIR_<GROUP> (a group's lib/ and include/ built
# elsewhere) are honoured as QoLA honours them. qola's QOLA_PREBUILT_URL (a CMake variable or the
# environment) makes qola_add_modules fetch each module by its library key (`qola build
# --prebuilt`) before any checkout: the tree is prepared only for a module the store lacks;
# QOLA_TRUSTED_KEYS (a CMake list or the environment) takes only archives its publishers signed;
# when none is, OUT_AITER_DIR is BUILD_DIR/aiter-headers (the AITER and composable_kernel headers
# the public headers include, at their paths in the tree). As in QoLA, a manifest must hold exactly one
# `aiter_commit = "..."` line, and one configure checks a manifest's tree out once into one
# directory (the global property QOLA_CHECKOUT_DONE_<commit>_<dir>): a second subproject with the
# same manifest and directory takes the tree as the first left it.

include_guard(GLOBAL)

# QoLA's variables: this module's directory, and the package holding it.
set(QOLA_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")
get_filename_component(QOLA_ROOT_DIR "${QOLA_CMAKE_DIR}/.." ABSOLUTE)

# The commit a manifest pins: its one `aiter_commit = "..."` line (QoLA's rule: exactly one line
# of that form, else the configure stops).
function(qola_read_manifest_commit manifest out_var)
  if(NOT EXISTS "${manifest}")
    message(FATAL_ERROR "[qola] no manifest at ${manifest}")
  endif()
  file(STRINGS "${manifest}" commit_lines REGEX "^[ \t]*aiter_commit[ \t]*=[ \t]*\"[^\"]+\"")
  list(LENGTH commit_lines count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "[qola] ${manifest}: expected exactly one `aiter_commit = \"...\"` line, found ${count}: pin one AITER commit in [qola]")
  endif()
  string(REGEX MATCH "\"([^\"]+)\"" quoted "${commit_lines}")
  set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

# The Python interpreter: the caller's Python_EXECUTABLE, else the one find_package finds.
function(qola_find_python out_var)
  if(NOT Python_EXECUTABLE)
    find_package(Python COMPONENTS Interpreter QUIET)
  endif()
  if(NOT Python_EXECUTABLE)
    message(FATAL_ERROR "[qola] no Python interpreter found (set Python_EXECUTABLE)")
  endif()
  set(${out_var} "${Python_EXECUTABLE}" PARENT_SCOPE)
endfunction()

# The qola executable (see the top of this file), cached in QOLA_EXECUTABLE.
function(_qola_executable out_var)
  if(NOT QOLA_EXECUTABLE AND DEFINED ENV{QOLA_EXECUTABLE})
    set(QOLA_EXECUTABLE "$ENV{QOLA_EXECUTABLE}" CACHE FILEPATH "the qola command line")
  endif()
  if(NOT QOLA_EXECUTABLE)
    qola_find_python(python)
    execute_process(
      COMMAND "${python}" -c "import sysconfig; print(sysconfig.get_path('scripts'))"
      OUTPUT_VARIABLE scripts OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    find_program(QOLA_EXECUTABLE qola HINTS "${scripts}" DOC "the qola command line")
  endif()
  if(NOT QOLA_EXECUTABLE)
    message(FATAL_ERROR "[qola] the qola command line was not found: `pip install qola`, or set QOLA_EXECUTABLE")
  endif()
  set(${out_var} "${QOLA_EXECUTABLE}" PARENT_SCOPE)
endfunction()

# Runs `qola <args...>`; a failure stops the configure with qola's own words: its standard
# output and standard error in the message, as QoLA's has them. qola's messages reach the
# terminal while it runs (CMake 3.18 and later echo them as they come; older ones at the end).
# With OUTPUT_VARIABLE <var>, standard output goes there.
function(qola_run_cli what)
  cmake_parse_arguments(QRC "" "OUTPUT_VARIABLE" "" ${ARGN})
  _qola_executable(qola)
  set(echo)
  if(NOT CMAKE_VERSION VERSION_LESS 3.18)
    set(echo ECHO_ERROR_VARIABLE)
  endif()
  execute_process(
    COMMAND "${qola}" ${QRC_UNPARSED_ARGUMENTS}
    RESULT_VARIABLE status
    OUTPUT_VARIABLE out
    ERROR_VARIABLE err
    ${echo}
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT echo AND NOT err STREQUAL "")
    message("${err}")
  endif()
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "[qola] ${what} failed (qola exit status ${status})\n${out}\n${err}")
  endif()
  if(QRC_OUTPUT_VARIABLE)
    set(${QRC_OUTPUT_VARIABLE} "${out}" PARENT_SCOPE)
  endif()
endfunction()

# QOLA_PREBUILT_DIR_<GROUP> of the environment, or "".
function(qola_prebuilt_dir group out_var)
  string(TOUPPER "${group}" upper)
  set(${out_var} "$ENV{QOLA_PREBUILT_DIR_${upper}}" PARENT_SCOPE)
endfunction()

# Makes `path` a configure dependency of the calling directory (editing it configures again),
# spelled absolute and normalised. A project that depends on the same file under another
# spelling in another directory (TransformerEngine e94d7e58's ck_fused_attn names
# `ck_fused_attn/../qola_manifest.toml`) would give ninja two rules for one file ("defined as an
# output multiple times"); at the end of the configure qola drops its own entry for a file the
# project depends on already, by another spelling.
function(_qola_configure_depends path)
  get_filename_component(path "${path}" ABSOLUTE)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${path}")
  set_property(GLOBAL APPEND PROPERTY QOLA_CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}|${path}")
  get_property(deferred GLOBAL PROPERTY QOLA_CONFIGURE_DEPENDS_DEFERRED)
  if(NOT deferred)
    set_property(GLOBAL PROPERTY QOLA_CONFIGURE_DEPENDS_DEFERRED TRUE)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _qola_drop_respelled_depends)
  endif()
endfunction()

# `dir` and every directory below it in the project.
function(_qola_directories dir out_var)
  set(all "${dir}")
  get_property(subdirectories DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdirectory IN LISTS subdirectories)
    _qola_directories("${subdirectory}" below)
    list(APPEND all ${below})
  endforeach()
  set(${out_var} "${all}" PARENT_SCOPE)
endfunction()

# See _qola_configure_depends.
function(_qola_drop_respelled_depends)
  get_property(added GLOBAL PROPERTY QOLA_CONFIGURE_DEPENDS)
  _qola_directories("${CMAKE_SOURCE_DIR}" directories)
  foreach(entry IN LISTS added)
    string(FIND "${entry}" "|" bar)
    string(SUBSTRING "${entry}" 0 ${bar} dir)
    math(EXPR start "${bar} + 1")
    string(SUBSTRING "${entry}" ${start} -1 path)
    file(REAL_PATH "${path}" real)
    set(respelled FALSE)
    foreach(other_dir IN LISTS directories)
      get_property(depends DIRECTORY "${other_dir}" PROPERTY CMAKE_CONFIGURE_DEPENDS)
      foreach(other IN LISTS depends)
        if(NOT other STREQUAL path)
          file(REAL_PATH "${other}" other_real BASE_DIRECTORY "${other_dir}")
          if(other_real STREQUAL real)
            set(respelled TRUE)
          endif()
        endif()
      endforeach()
    endforeach()
    if(respelled)
      get_property(mine DIRECTORY "${dir}" PROPERTY CMAKE_CONFIGURE_DEPENDS)
      list(REMOVE_ITEM mine "${path}")
      set_property(DIRECTORY "${dir}" PROPERTY CMAKE_CONFIGURE_DEPENDS "${mine}")
    endif()
  endforeach()
endfunction()

# Prepares the AITER tree a manifest names (the pinned commit and the series) in AITER_DIR
# (else DEFAULT_DIR), unless QOLA_AITER_SOURCE_DIR or NVTE_AITER_SOURCE_DIR names a tree to take
# as it is; once per manifest commit and directory in a configure; GROUPS are checked against
# the manifest (the tree is the same for all). OUT_DIR: the tree.
function(qola_checkout_aiter)
  cmake_parse_arguments(QCA "" "MANIFEST;AITER_DIR;DEFAULT_DIR;OUT_DIR" "GROUPS" ${ARGN})
  if(NOT QCA_MANIFEST)
    message(FATAL_ERROR "[qola] qola_checkout_aiter: MANIFEST is required")
  endif()
  set(tree "${QCA_AITER_DIR}")
  if(NOT tree)
    set(tree "${QCA_DEFAULT_DIR}")
  endif()
  if(NOT tree)
    message(FATAL_ERROR "[qola] qola_checkout_aiter: AITER_DIR or DEFAULT_DIR is required")
  endif()
  qola_read_manifest_commit("${QCA_MANIFEST}" sha)
  _qola_configure_depends("${QCA_MANIFEST}")
  set(given)
  foreach(var QOLA_AITER_SOURCE_DIR NVTE_AITER_SOURCE_DIR)
    if(NOT given AND NOT "$ENV{${var}}" STREQUAL "")
      set(given ${var})
    endif()
  endforeach()
  get_filename_component(tree "${tree}" ABSOLUTE)
  get_property(done GLOBAL PROPERTY "QOLA_CHECKOUT_DONE_${sha}_${tree}")
  if(given)
    set(tree "$ENV{${given}}")
    message(STATUS "[qola] building against ${tree} as it is (${given})")
  elseif(done)
    message(STATUS "[qola] AITER ${sha} in ${tree}: checked out by this configure already")
  else()
    set(groups)
    foreach(group IN LISTS QCA_GROUPS)
      list(APPEND groups --group "${group}")
    endforeach()
    qola_run_cli("preparing AITER in ${tree}"
      checkout --json --manifest "${QCA_MANIFEST}" --aiter-root "${tree}" ${groups}
      OUTPUT_VARIABLE report)
    string(JSON action GET "${report}" action)
    string(JSON commit GET "${report}" commit)
    message(STATUS "[qola] AITER ${commit} in ${tree}: ${action}")
    # The series' patches: editing one configures again.
    string(JSON inputs LENGTH "${report}" inputs)
    if(inputs GREATER 0)
      math(EXPR last "${inputs} - 1")
      foreach(i RANGE ${last})
        string(JSON input GET "${report}" inputs ${i})
        _qola_configure_depends("${input}")
      endforeach()
    endif()
    set_property(GLOBAL PROPERTY "QOLA_CHECKOUT_DONE_${sha}_${tree}" TRUE)
  endif()
  if(NOT EXISTS "${tree}/csrc/include")
    message(FATAL_ERROR "[qola] ${tree} is no AITER tree (no csrc/include)")
  endif()
  if(QCA_OUT_DIR)
    set(${QCA_OUT_DIR} "${tree}" PARENT_SCOPE)
  endif()
endfunction()

# Sets the caller's result variables of one group's build (shared by the two functions below).
macro(_qola_results prefix)
  foreach(result INCLUDE_DIR LIB_DIR LIBS CONFIG_DIR)
    if(${prefix}_OUT_${result})
      string(TOLOWER "${result}" value)
      set(${${prefix}_OUT_${result}} "${${value}}" PARENT_SCOPE)
    endif()
  endforeach()
endmacro()

# Builds one group of the manifest's modules (`qola build --group GROUP --skip-checkout`)
# against AITER_DIR into BUILD_DIR, or takes QOLA_PREBUILT_DIR_<GROUP>; sets OUT_INCLUDE_DIR,
# OUT_LIB_DIR, OUT_LIBS (LIBS when given, checked to exist; else every .so) and OUT_CONFIG_DIR.
function(qola_build_modules)
  cmake_parse_arguments(QBM ""
    "GROUP;MANIFEST;BUILD_DIR;AITER_DIR;PREPARE_FROM;OUT_INCLUDE_DIR;OUT_LIB_DIR;OUT_LIBS;OUT_CONFIG_DIR"
    "ARCHS;LIBS" ${ARGN})
  foreach(required GROUP BUILD_DIR)
    if(NOT QBM_${required})
      message(FATAL_ERROR "[qola] qola_build_modules: ${required} is required")
    endif()
  endforeach()
  qola_prebuilt_dir("${QBM_GROUP}" prebuilt)
  if(prebuilt)
    message(STATUS "[qola] ${QBM_GROUP}: prebuilt libraries from ${prebuilt}")
    set(root "${prebuilt}")
  else()
    if(NOT QBM_MANIFEST OR NOT QBM_AITER_DIR)
      message(FATAL_ERROR "[qola] qola_build_modules: MANIFEST and AITER_DIR are required (qola_checkout_aiter gives the tree)")
    endif()
    if(QBM_PREPARE_FROM)
      # Prebuilt by key from this store, else prepared and built here (no --skip-checkout);
      # archives taken only from the publishers QOLA_TRUSTED_KEYS names (a CMake list here;
      # the environment's reaches qola as it is).
      set(source --prebuilt "${QBM_PREPARE_FROM}")
      foreach(key IN LISTS QOLA_TRUSTED_KEYS)
        list(APPEND source --trust "${key}")
      endforeach()
    elseif(NOT EXISTS "${QBM_AITER_DIR}/csrc/include")
      message(FATAL_ERROR "[qola] ${QBM_AITER_DIR} is no AITER tree (no csrc/include): run qola_checkout_aiter first")
    else()
      set(source --skip-checkout)
    endif()
    set(archs)
    foreach(arch IN LISTS QBM_ARCHS)
      list(APPEND archs --arch "${arch}")
    endforeach()
    qola_run_cli("building group ${QBM_GROUP}"
      build --manifest "${QBM_MANIFEST}" --aiter-root "${QBM_AITER_DIR}"
            --output-dir "${QBM_BUILD_DIR}" --group "${QBM_GROUP}" ${archs} ${source})
    _qola_configure_depends("${QBM_MANIFEST}")
    set(root "${QBM_BUILD_DIR}")
  endif()
  set(include_dir "${root}/include")
  set(lib_dir "${root}/lib")
  set(config_dir "${root}/configs")
  if(NOT EXISTS "${include_dir}/qola_config.h")
    message(FATAL_ERROR "[qola] ${QBM_GROUP}: no qola_config.h in ${include_dir}")
  endif()
  if(QBM_LIBS)
    set(libs ${QBM_LIBS})
    foreach(lib IN LISTS libs)
      if(NOT EXISTS "${lib_dir}/${lib}")
        message(FATAL_ERROR "[qola] ${QBM_GROUP}: ${lib} is not in ${lib_dir}")
      endif()
    endforeach()
  else()
    file(GLOB libs RELATIVE "${lib_dir}" "${lib_dir}/*.so")
    if(NOT libs)
      message(FATAL_ERROR "[qola] ${QBM_GROUP}: no shared library in ${lib_dir}")
    endif()
  endif()
  _qola_results(QBM)
endfunction()

# Both phases for one group: the checkout into BUILD_DIR/third_party/aiter (none when AITER_DIR
# names a tree already prepared, or for a prebuilt group) and the build; OUT_AITER_DIR: the tree.
function(qola_add_modules)
  cmake_parse_arguments(QAM ""
    "GROUP;MANIFEST;BUILD_DIR;AITER_DIR;OUT_INCLUDE_DIR;OUT_LIB_DIR;OUT_LIBS;OUT_AITER_DIR;OUT_CONFIG_DIR"
    "ARCHS;LIBS" ${ARGN})
  foreach(required GROUP MANIFEST BUILD_DIR)
    if(NOT QAM_${required})
      message(FATAL_ERROR "[qola] qola_add_modules: ${required} is required")
    endif()
  endforeach()
  qola_prebuilt_dir("${QAM_GROUP}" prebuilt)
  set(tree "${QAM_AITER_DIR}")
  set(store "${QOLA_PREBUILT_URL}")
  if(NOT store)
    set(store "$ENV{QOLA_PREBUILT_URL}")
  endif()
  set(prepare)
  if(NOT prebuilt AND NOT tree AND store)
    # A store of prebuilt libraries: `qola build` fetches each module by its key and prepares
    # the tree only when one must be built here.
    set(tree "${QAM_BUILD_DIR}/third_party/aiter")
    set(prepare PREPARE_FROM "${store}")
  elseif(NOT prebuilt AND NOT tree)
    qola_checkout_aiter(MANIFEST "${QAM_MANIFEST}"
      DEFAULT_DIR "${QAM_BUILD_DIR}/third_party/aiter" GROUPS "${QAM_GROUP}" OUT_DIR tree)
  endif()
  qola_build_modules(GROUP "${QAM_GROUP}" MANIFEST "${QAM_MANIFEST}" BUILD_DIR "${QAM_BUILD_DIR}"
    AITER_DIR "${tree}" ARCHS ${QAM_ARCHS} LIBS ${QAM_LIBS} ${prepare}
    OUT_INCLUDE_DIR include_dir OUT_LIB_DIR lib_dir OUT_LIBS libs OUT_CONFIG_DIR config_dir)
  _qola_results(QAM)
  if(prepare AND NOT EXISTS "${tree}/csrc/include")
    # Every module came prebuilt: no checkout, and the headers to compile against are the
    # header-only tree `qola build` writes.
    set(tree "${QAM_BUILD_DIR}/aiter-headers")
  endif()
  if(QAM_OUT_AITER_DIR)
    set(${QAM_OUT_AITER_DIR} "${tree}" PARENT_SCOPE)
  endif()
endfunction()
