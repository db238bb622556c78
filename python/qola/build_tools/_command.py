"""Running qola's command line with ``--json`` and reading its one JSON object."""

import json
import os
import subprocess
from typing import Any, Dict, List, Optional, Tuple

from qola import find_qola_bin


def path_option(name: str, value: Optional[str]) -> List[str]:
    """``[name, absolute value]``, or nothing for ``None``."""
    return [] if value is None else [name, os.path.abspath(os.fspath(value))]


def run_json(args: List[str]) -> Tuple[int, Dict[str, Any]]:
    """Run ``qola <args...> --json``; standard error passes through (qola's progress).
    Returns the exit status and the JSON object qola printed."""
    proc = subprocess.run(
        [find_qola_bin()] + args + ["--json"],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    text = proc.stdout.decode("utf-8", errors="replace").strip()
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        raise RuntimeError(
            "qola {} printed no JSON (exit status {}): {}".format(args[0], proc.returncode, text)
        )
    return proc.returncode, value


def failure(command: str, status: int, value: Dict[str, Any]) -> RuntimeError:
    """The error for a failed ``qola <command>``, in qola's words."""
    if value.get("action") == "error":
        return RuntimeError("qola {}: {}".format(command, value.get("error", "")))
    if value.get("action") == "refused":
        edited = value.get("edited_paths", []) + value.get("untracked_paths", [])
        return RuntimeError(
            "qola {}: refused: {} holds local edits ({}); carry them as a patch (qola diff) or "
            "pass force=True to back them up and prepare".format(
                command, value.get("root", ""), ", ".join(edited) or "see above"
            )
        )
    return RuntimeError("qola {} failed with exit status {}".format(command, status))
