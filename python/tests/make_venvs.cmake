# cmake -DPYTHON=python3 -DMAKE_VENV=tests/languages/make_venv.py
#       -DVENVS="dir|requirements;..." -DINTEROP_PINS=tests/interop/requirements.txt -P make_venvs.cmake
# Makes (or reuses) each venv with make_venv.py; a requirements file that pins numpy must
# pin the version tests/interop/requirements.txt pins.
foreach(_pair IN LISTS VENVS)
  string(REPLACE "|" ";" _parts "${_pair}")
  list(GET _parts 0 _venv)
  list(GET _parts 1 _requirements)
  file(STRINGS "${_requirements}" _numpy REGEX "^numpy==")
  set(_check "")
  if(_numpy)
    set(_check "${INTEROP_PINS}")
  endif()
  execute_process(COMMAND "${PYTHON}" "${MAKE_VENV}" "${_venv}" "${_requirements}" ${_check}
                  RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "making ${_venv} from ${_requirements} failed (${_rc})")
  endif()
endforeach()
