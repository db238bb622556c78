"""QoLA's command line as a module, run by qola's executable.

``python -m qola.cli <command> ...`` runs qola with the same arguments; its exit status and
output are the command's own. ``qola.cli.main(argv)`` is QoLA's ``main``: it runs the command
with ``argv`` (default: ``sys.argv[1:]``) and returns its exit status.
"""

import os
import subprocess
import sys
from typing import List, Optional

from qola import find_qola_bin


def main(argv: Optional[List[str]] = None) -> int:
    """Run ``qola <argv...>`` and return its exit status (QoLA's ``qola.cli.main``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return subprocess.call([find_qola_bin()] + args)


def _exec() -> None:
    qola = find_qola_bin()
    argv = [qola] + sys.argv[1:]
    if os.name == "posix":
        # The process becomes qola: signals, exit status and output are exactly its own.
        os.execv(qola, argv)
    raise SystemExit(subprocess.call(argv))


if __name__ == "__main__":
    _exec()
