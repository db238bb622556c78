"""qola: prepare AMD's AITER sources and build its HIP kernels (a drop-in for QoLA).

The work is done by the ``qola`` command line this package's wheel installs; ``python -m
qola.cli ...`` (and ``python -m qola ...``) run it with the same arguments, exit status and
output. ``CMAKE_DIR`` holds qola's CMake module, ``QoLA.cmake``.
"""

import os
import shutil
import sys
import sysconfig

__all__ = ["CMAKE_DIR", "__version__", "find_qola_bin"]

try:
    from importlib.metadata import PackageNotFoundError, version as _version

    try:
        #: The installed wheel's version (the ``qola`` crate's, as ``qola --version`` says it).
        __version__ = _version("qola")
    except PackageNotFoundError:  # a source checkout on PYTHONPATH, not installed
        __version__ = "0+unknown"
except ImportError:  # Python 3.7's standard library has no importlib.metadata
    __version__ = "0+unknown"

#: The directory of qola's CMake module (``include(${CMAKE_DIR}/QoLA.cmake)``).
CMAKE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cmake")

_EXE = "qola" + (sysconfig.get_config_var("EXE") or "")


def find_qola_bin() -> str:
    """The ``qola`` executable: ``QOLA_EXECUTABLE`` when set, else the one this wheel installed
    (the scripts directory of this Python's install scheme, or of the user scheme), else
    ``qola`` on ``PATH``."""
    named = os.environ.get("QOLA_EXECUTABLE")
    if named:
        return named
    candidates = [sysconfig.get_path("scripts")]
    user_scheme = {"nt": "nt_user", "posix": "posix_user"}.get(os.name)
    if user_scheme and user_scheme in sysconfig.get_scheme_names():
        candidates.append(sysconfig.get_path("scripts", scheme=user_scheme))
    # A target install (pip install --target DIR): DIR/bin beside DIR/qola.
    candidates.append(os.path.join(os.path.dirname(os.path.dirname(CMAKE_DIR)), "bin"))
    for directory in candidates:
        path = os.path.join(directory, _EXE)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(_EXE)
    if found:
        return found
    sys.stderr.write(
        "qola: the qola executable is not installed with this package (looked in {}); "
        "reinstall the wheel (pip install --force-reinstall qola) or set QOLA_EXECUTABLE\n".format(
            ", ".join(candidates)
        )
    )
    raise SystemExit(1)
