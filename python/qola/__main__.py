"""``python -m qola ...``: the same as ``python -m qola.cli ...``."""

from qola.cli import _exec

_exec()
