"""``python -m qola.cli <command> ...``: QoLA's module invocation, running qola's executable
with the same arguments; its exit status and output are the command's own."""

import os
import subprocess
import sys

from qola import find_qola_bin


def main() -> None:
    qola = find_qola_bin()
    argv = [qola] + sys.argv[1:]
    if os.name == "posix":
        # The process becomes qola: signals, exit status and output are exactly its own.
        os.execv(qola, argv)
    raise SystemExit(subprocess.call(argv))


if __name__ == "__main__":
    main()
