"""``build_kernels``: QoLA's build (``qola build``) for Python callers."""

from typing import Any, Dict, List, Optional

from ._command import failure, path_option, run_json


def build_kernels(
    manifest_path: str,
    *,
    output_dir: str,
    aiter_root: Optional[str] = None,
    archs: Optional[List[str]] = None,
    verbose: bool = False,
    build_mode: Optional[str] = None,
    aiter_commit: Optional[str] = None,
    patches_dir: Optional[str] = None,
    skip_checkout: bool = False,
    groups: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """Build the manifest's modules into ``output_dir`` and return what ``manifest.json`` holds.

    QoLA's signature and meaning: ``archs`` over ``[build] architectures`` and ``GPU_ARCHS``,
    ``build_mode`` (``"cpp_itfs"``; ``"pybind"`` is refused: it needs PyTorch) over
    ``[build] mode``, ``aiter_commit`` and ``patches_dir`` over the manifest's ``[qola]``,
    ``skip_checkout`` to build the tree as it is, ``groups`` to build those groups only. A
    module that fails is in the result (``summary["failed"]``), as in QoLA; what stops every
    module (the manifest, the checkout, the compiler) raises ``RuntimeError``.
    """
    args = ["build"]
    args += path_option("--manifest", manifest_path)
    args += path_option("--output-dir", output_dir)
    args += path_option("--aiter-root", aiter_root)
    for arch in archs or []:
        args += ["--arch", arch]
    if verbose:
        args.append("--verbose")
    if build_mode is not None:
        args += ["--mode", build_mode]
    if aiter_commit is not None:
        args += ["--aiter-commit", aiter_commit]
    args += path_option("--patches-dir", patches_dir)
    if skip_checkout:
        args.append("--skip-checkout")
    for group in groups or []:
        args += ["--group", group]
    status, value = run_json(args)
    if "summary" not in value:
        raise failure("build", status, value)
    return value
