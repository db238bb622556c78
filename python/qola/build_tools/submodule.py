"""``checkout_aiter``: QoLA's checkout (``qola checkout``) for Python callers."""

import os
from typing import List, Optional

from ._command import failure, path_option, run_json


def checkout_aiter(
    manifest_path: Optional[str] = None,
    aiter_root: Optional[str] = None,
    aiter_commit: Optional[str] = None,
    patches_dir: Optional[str] = None,
    force: bool = False,
    groups: Optional[List[str]] = None,
) -> str:
    """Prepare the AITER tree (the commit and the patch series) and return its absolute path.

    As QoLA's: ``aiter_root``, ``aiter_commit`` and ``patches_dir`` over the manifest's
    ``[qola]``; ``groups`` are checked to be the manifest's (the tree is the same for every
    group). Unlike QoLA's, a tree already prepared is left untouched, and local edits are never
    reset: they are refused (``RuntimeError``), or with ``force=True`` saved as a backup patch
    first. ``aiter_root=None`` is qola's default (``QOLA_AITER_ROOT``, else qola's cache).
    """
    args = ["checkout"]
    args += path_option("--manifest", manifest_path)
    args += path_option("--aiter-root", aiter_root)
    if aiter_commit is not None:
        args += ["--aiter-commit", aiter_commit]
    args += path_option("--patches-dir", patches_dir)
    if force:
        args.append("--force")
    for group in groups or []:
        args += ["--group", group]
    status, value = run_json(args)
    if status != 0 or value.get("action") in ("error", "refused"):
        raise failure("checkout", status, value)
    return os.path.realpath(value["root"])
