"""``python -m qola ...``: the same as ``python -m qola.cli ...``."""

from qola.cli import main

main()
