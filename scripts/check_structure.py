#!/usr/bin/env python3
"""Checks two rules of the source tree's structure (docs/ARCHITECTURE.md, "Structure checks"):

1. Function length: no function or method defined in src/ is longer than BUDGET lines (from its
   signature line to its closing brace; lambdas count toward the function that holds them).
   Function extents come from Universal Ctags (Debian's universal-ctags, scripts/install_deps.sh).
2. Layers: no file in src/ includes a header of a layer above its own. Each folder of src/ is a
   layer; ALLOWED below says which layers' headers each may include (its own and those below).
   The public headers in include/inferloop/ belong to the layer that implements them.

Justified exceptions are listed, one a line with a reason each, in scripts/structure_exceptions.txt:
    function <path>:<name>  <reason>
    include <path> -> <included header>  <reason>
An exception that no longer matches anything is itself an error (the list stays honest).

Usage: scripts/check_structure.py [--root DIR] [--budget N] [--list N]
  --list N   also print the N longest functions (for planning; the check is unchanged).
Exit status: 0 clean, 1 violations (each printed), 2 cannot run (no ctags).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

BUDGET = 150

# Layers, bottom to top. A layer may include its own headers and those of the layers listed.
# serve_core is the part of serve/ that needs no model runtime (CMakeLists.txt IL_SERVE_CORE_NAMES,
# plus serve/ headers that have no .cc: pure interfaces); frontends and perf build on it alone.
LOWER = {
    "base": [],
    "llm": ["base"],
    "graph": ["base"],
    "compute": ["base", "graph", "imaging"],
    "optimizer": ["base", "graph", "compute"],
    "runtime": ["base", "graph", "compute", "optimizer"],
    "tools": ["base", "graph", "compute", "optimizer", "runtime"],
    "serve_core": ["base"],
    "serve": ["base", "llm", "runtime", "serve_core"],
    "frontends": ["base", "serve_core"],
    "perf": ["base", "serve_core", "frontends"],
    "imaging": ["base"],
    "control": ["base", "llm", "graph", "compute", "optimizer", "runtime", "tools", "serve_core", "serve"],
    "backends": ["base", "llm", "runtime", "imaging", "serve_core", "serve", "control"],
    "server": ["base", "llm", "runtime", "imaging", "serve_core", "serve", "control", "backends", "frontends"],
    # src/capi: what only libinferloop.so adds (the C API for LLMs, cmake/inferloop_library.cmake).
    "capi": ["base", "llm", "graph", "compute", "optimizer", "runtime"],
    "cli": ["base", "llm", "graph", "compute", "optimizer", "runtime", "tools", "serve_core", "serve",
            "imaging", "control", "backends", "frontends", "perf", "server"],
}
# include/inferloop/<header> -> the layer that implements it.
PUBLIC_HEADERS = {
    "status.h": "base", "tensor.h": "base", "shape.h": "base", "precision.h": "base", "version.h": "base",
    "session.h": "runtime", "inferloop_c.h": "runtime", "inferloop_llm_c.h": "capi",
}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def serve_core_names(root):
    """Basenames (no extension) of serve/ files that belong to il_serve_core."""
    text = open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8").read()
    m = re.search(r"set\(IL_SERVE_CORE_NAMES([^)]*)\)", text)
    names = set(m.group(1).split()) if m else set()
    serve = os.path.join(root, "src", "serve")
    for f in os.listdir(serve):
        stem, ext = os.path.splitext(f)
        if ext == ".h" and not os.path.exists(os.path.join(serve, stem + ".cc")):
            names.add(stem)  # an interface: header only
    return names


def layer_of(relpath, core):
    """The layer of a path relative to src/ ('serve/x.h' -> 'serve' or 'serve_core')."""
    top = relpath.split("/", 1)[0]
    if top == "serve":
        stem = os.path.splitext(os.path.basename(relpath))[0]
        return "serve_core" if stem in core else "serve"
    return top if top in LOWER else None


def source_files(root):
    src = os.path.join(root, "src")
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if f.endswith((".cc", ".h", ".c")):
                yield os.path.relpath(os.path.join(dirpath, f), src)


def included_layer(inc, including_rel, root, core):
    """The layer an include names, or None for system/third-party/generated headers."""
    if inc.startswith("inferloop/"):
        return PUBLIC_HEADERS.get(inc[len("inferloop/"):], "runtime")
    here = os.path.dirname(os.path.join(root, "src", including_rel))
    if os.path.exists(os.path.join(here, inc)):  # next to the includer
        return layer_of(os.path.relpath(os.path.normpath(os.path.join(here, inc)),
                                        os.path.join(root, "src")), core)
    if os.path.exists(os.path.join(root, "src", inc)):
        return layer_of(inc, core)
    return None


def check_layers(root, core, exceptions, used):
    errors = []
    for rel in source_files(root):
        own = layer_of(rel, core)
        if own is None:
            continue
        allowed = set(LOWER[own]) | {own}
        if own == "serve":
            allowed.add("serve_core")
        text = open(os.path.join(root, "src", rel), encoding="utf-8", errors="replace").read()
        for inc in INCLUDE_RE.findall(text):
            layer = included_layer(inc, rel, root, core)
            if layer is None or layer in allowed:
                continue
            key = ("include", f"src/{rel} -> {inc}")
            if key in exceptions:
                used.add(key)
                continue
            errors.append(f"layers: src/{rel} ({own}) includes {inc} ({layer}), a layer it may not use "
                          f"(allowed: {', '.join(sorted(allowed))})")
    return errors


def function_lengths(root):
    """(length, 'src/path', name, first line) for every function definition ctags finds in src/."""
    out = subprocess.run(["ctags", "-R", "--languages=C++,C", "--kinds-C++=f", "--kinds-C=f",
                          "--fields=+ne", "-o", "-", "src"], cwd=root, capture_output=True,
                         text=True, check=True).stdout
    result = []
    for line in out.splitlines():
        parts = line.split("\t")
        name, path = parts[0], parts[1]
        fields = dict(p.split(":", 1) for p in parts[3:] if ":" in p)
        if name.startswith("__anon") or "end" not in fields or "line" not in fields:
            continue  # lambdas count toward their enclosing function
        start, end = int(fields["line"]), int(fields["end"])
        result.append((end - start + 1, path, name, start))
    return result


def check_functions(root, budget, exceptions, used, listing):
    errors = []
    lengths = sorted(function_lengths(root), reverse=True)
    for n, path, name, start in lengths[:listing]:
        print(f"  {n:5d}  {path}:{start}  {name}")
    for n, path, name, start in lengths:
        if n <= budget:
            break
        key = ("function", f"{path}:{name}")
        if key in exceptions:
            used.add(key)
            continue
        errors.append(f"length: {path}:{start} {name} is {n} lines (budget {budget})")
    return errors


def read_exceptions(path):
    exceptions, errors = set(), []
    if not os.path.exists(path):
        return exceptions, errors
    for i, raw in enumerate(open(path, encoding="utf-8"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^(function)\s+(\S+)\s+(\S.*)$", line) or \
            re.match(r"^(include)\s+(\S+\s+->\s+\S+)\s+(\S.*)$", line)
        if not m:
            errors.append(f"{path}:{i}: not 'function <path>:<name> <reason>' or "
                          f"'include <path> -> <header> <reason>'")
            continue
        kind, what = m.group(1), re.sub(r"\s+->\s+", " -> ", m.group(2))
        exceptions.add((kind, what))
    return exceptions, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--budget", type=int, default=BUDGET)
    ap.add_argument("--list", type=int, default=0)
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if shutil.which("ctags") is None:
        print("check_structure: ctags not found (Debian package universal-ctags; scripts/install_deps.sh)")
        return 2
    exc_path = os.path.join(root, "scripts", "structure_exceptions.txt")
    exceptions, errors = read_exceptions(exc_path)
    used = set()
    core = serve_core_names(root)
    errors += check_layers(root, core, exceptions, used)
    errors += check_functions(root, args.budget, exceptions, used, args.list)
    for kind, what in sorted(exceptions - used):
        errors.append(f"stale exception (matches nothing now; remove it): {kind} {what}")
    for e in errors:
        print(e)
    n_files = sum(1 for _ in source_files(root))
    print(f"check_structure: {n_files} files, function budget {args.budget} lines, "
          f"{len(used)} listed exceptions used, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
