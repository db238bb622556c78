# qola: the compile flags AITER's `aiter/jit/core.py` gives a module, computed by that core.py.
#
# Reads a JSON request on standard input and writes a JSON answer on standard output. The
# statements of `build_module`'s `MainFunc` from the first assignment to `flags_cc` up to (not
# including) the one that calls `_jit_compile` are run, as core.py runs them, with the names in
# BOUND given by qola (the compiler, the architectures, the tree's paths, the module's recipe).
# Any other name they use is taken from core.py's own top level (an import, a def, an
# assignment) when first needed. The environment is core.py's to read (each name read is
# reported, so qola tracks it) but not to change; nothing here may write a file, run a shell or
# import torch.
import ast
import json
import os as _real_os
import sys
import types
from collections.abc import MutableMapping


class Refused(Exception):
    """What core.py's flag code asked that qola does not give it."""


class RecordingEnviron(MutableMapping):
    """The process environment as core.py sees it: every name looked up is recorded; writes
    stay here."""

    def __init__(self):
        self.base = dict(_real_os.environ)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return self.base[key]

    def __contains__(self, key):
        self.read.add(key)
        return key in self.base

    def __setitem__(self, key, value):
        self.base[key] = value

    def __delitem__(self, key):
        del self.base[key]

    def __iter__(self):
        raise Refused("core.py's flag code lists the whole environment")

    def __len__(self):
        return len(self.base)


WRITERS = {
    "makedirs", "mkdir", "remove", "unlink", "rename", "replace", "rmdir", "removedirs",
    "system", "symlink", "link", "chmod", "chown", "truncate", "utime",
}


def os_proxy(environ):
    proxy = types.ModuleType("os")
    proxy.environ = environ
    proxy.getenv = lambda key, default=None: environ.get(key, default)

    def refuse(name):
        def refused(*args, **kwargs):
            raise Refused(f"core.py's flag code calls os.{name}, which writes; qola does not run it")
        return refused

    def lookup(name):
        if name in WRITERS:
            return refuse(name)
        return getattr(_real_os, name)

    proxy.__getattr__ = lookup
    return proxy


def main_func_slice(tree):
    """The statements of build_module's MainFunc that compute the flags."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "build_module":
            for inner in ast.walk(node):
                if isinstance(inner, ast.FunctionDef) and inner.name == "MainFunc":
                    body = inner.body
                    start = next(
                        (i for i, s in enumerate(body)
                         if isinstance(s, ast.Assign)
                         and any(isinstance(t, ast.Name) and t.id == "flags_cc" for t in s.targets)),
                        None)
                    end = next(
                        (i for i, s in enumerate(body)
                         if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                                and c.func.id == "_jit_compile" for c in ast.walk(s))),
                        None)
                    if start is None or end is None or end <= start:
                        raise Refused(
                            "build_module's MainFunc has no `flags_cc = ...` before its `_jit_compile(...)` call")
                    return body[start:end]
    raise Refused("core.py defines no build_module with a nested MainFunc")


def top_level(tree):
    """Each name core.py's top level defines by a plain statement, and that statement."""
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = (alias.asname or alias.name).split(".")[0]
                one = ast.ImportFrom(
                    module=node.module, names=[alias], level=node.level
                ) if isinstance(node, ast.ImportFrom) else ast.Import(names=[alias])
                found[name] = ast.copy_location(one, node)
    return found


# Modules core.py may import for its flags: the standard library's and packaging's.
IMPORTABLE = {"functools", "shlex", "subprocess", "re", "sys", "logging", "packaging", "shutil",
              "multiprocessing", "time", "json", "glob", "importlib", "typing", "pathlib"}


def main():
    request = json.load(sys.stdin)
    core = request["core_py"]
    with open(core, encoding="utf-8") as f:
        tree = ast.parse(f.read(), core)
    statements = main_func_slice(tree)
    definitions = top_level(tree)
    environ = RecordingEnviron()
    hipcc = request["hipcc"]

    def executable_path(name):
        if name == "hipcc":
            return hipcc
        raise Refused(f"core.py's flag code asks for the program {name!r}; qola gives it hipcc only")

    def no_torch(*args, **kwargs):
        raise Refused("core.py's flag code imports torch")

    import logging
    BOUND = {
        "os": os_proxy(environ),
        "get_gfx": lambda: request["arch"],
        "get_gfx_list": lambda: list(request["archs"]),
        "validate_and_update_archs": lambda: list(request["archs"]),
        "get_hip_version": lambda: "HIP version: " + request["hip_version"],
        "executable_path": executable_path,
        # qola probes the `-mllvm` flags itself (cached); AITER's checker runs hipcc per flag.
        "hip_flag_checker": lambda flag: True,
        # The job count is qola's.
        "check_and_set_ninja_worker": lambda: None,
        "logger": logging.getLogger("qola.core_flags"),
        "torch_exclude": True,
        "torch": types.SimpleNamespace(__getattr__=no_torch),
        "hipify": False,
        "is_standalone": True,
        "prebuild": 0,
        "blob_gen_cmd": [],
        "sources": [],
        # It names include directories only, which qola chooses; fixed, so the answer holds
        # for every output directory.
        "op_dir": "{op_dir}",
        "src_dir": "{op_dir}/build/srcs",
        "extra_include": list(request["extra_include"]),
        "flags_extra_cc": list(request["flags_extra_cc"]),
        "flags_extra_hip": list(request["flags_extra_hip"]),
    }
    BOUND.update(request["paths"])
    scope = {"__builtins__": __builtins__, "__name__": "aiter.jit.core"}
    scope.update(BOUND)
    taken = set()

    def run(statements, into):
        """Runs `statements` with `into` as their globals, defining each missing name from
        core.py's top level (into `scope`) and running them again."""
        code = compile(ast.Module(body=statements, type_ignores=[]), core, "exec")
        while True:
            names = into()
            try:
                exec(code, names)
                return names
            except NameError as e:
                define(getattr(e, "name", None))

    def define(name):
        if name is None or name in taken or name not in definitions:
            raise Refused(f"build_module's flag code uses `{name}`, which core.py's top level does not define plainly")
        taken.add(name)
        node = definitions[name]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = (node.module if isinstance(node, ast.ImportFrom) else node.names[0].name) or ""
            if module.split(".")[0] not in IMPORTABLE:
                raise Refused(f"build_module's flag code uses `{name}`, imported from {module}, which qola does not import")
        run([node], lambda: scope)

    names = run(statements, lambda: dict(scope))
    json.dump({
        "flags_cc": [str(f) for f in names["flags_cc"]],
        "flags_hip": [str(f) for f in names["flags_hip"]],
        "environment": sorted(environ.read),
        "bound": sorted(BOUND),
        "taken": sorted(taken),
    }, sys.stdout)


if __name__ == "__main__":
    try:
        main()
    except Refused as e:
        print(f"qola: {e}", file=sys.stderr)
        sys.exit(3)
