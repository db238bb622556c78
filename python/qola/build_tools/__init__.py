"""QoLA's Python API (``qola.build_tools`` of ROCm/QoLA), with QoLA's signatures, defaults and
return values, running qola's command line underneath: what ``qola build`` and ``qola
checkout`` do, for Python callers such as TransformerEngine's ``setup.py``.

qola's messages (progress, warnings) go to standard error as the command prints them; a failure
raises ``RuntimeError`` with qola's words.
"""

from .builder import build_kernels
from .submodule import checkout_aiter

__all__ = ["build_kernels", "checkout_aiter"]
