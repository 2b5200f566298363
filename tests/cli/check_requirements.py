#!/usr/bin/env python3
"""Checks that every Python package the tests compare against or read is
pinned exactly, in the one place (tools/requirements.txt), and installed at
that version in the Python that runs the tests.

    check_requirements.py <source-dir>

- every line of tools/requirements.txt is `name==version`;
- tools/tb installs Python packages from that file only;
- each third-party module imported by tools/ and tests/ belongs to a pinned
  distribution (or to one a pinned distribution requires);
- the running interpreter has each pinned version.
"""

import ast
import importlib.metadata as metadata
import pathlib
import re
import sys


def pins(path):
    out = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#")[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([0-9][A-Za-z0-9_.+-]*)", line)
        if not match:
            sys.exit(f"{path}:{number}: '{line}' is not an exact pin name==version")
        out[match.group(1).lower().replace("_", "-")] = match.group(2)
    return out


def imported_modules(root):
    modules = set()
    for directory in ("tools", "tests"):
        for path in (root / directory).rglob("*.py"):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules.update(a.name.split(".")[0] for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    modules.add(node.module.split(".")[0])
    return modules


def main():
    root = pathlib.Path(sys.argv[1])
    pinned = pins(root / "tools" / "requirements.txt")
    problems = []

    tb = (root / "tools" / "tb").read_text()
    for line in tb.splitlines():
        if "pip install" in line and "-r" not in line.split():
            problems.append(f"tools/tb installs packages outside requirements.txt: {line.strip()}")

    for name, version in pinned.items():
        try:
            installed = metadata.version(name).split("+")[0]
        except metadata.PackageNotFoundError:
            problems.append(f"{name}=={version} is pinned but not installed")
            continue
        if installed != version:
            problems.append(f"{name} is {installed}, pinned {version}")

    # Distributions the pins pull in count as covered (e.g. filelock by torch).
    covered = set(pinned)
    for name in list(pinned):
        try:
            requirements = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # Reported above as pinned but not installed.
        for requirement in requirements:
            if "extra ==" not in requirement:
                covered.add(re.split(r"[ ;<>=!~\[(]", requirement, 1)[0].lower().replace("_", "-"))
    owners = metadata.packages_distributions()
    for module in sorted(imported_modules(root)):
        if module in sys.stdlib_module_names or module not in owners:
            continue  # The standard library, or a test's own helper module.
        dists = {d.lower().replace("_", "-") for d in owners[module]}
        if not dists & covered:
            problems.append(f"tools/ or tests/ import '{module}' ({', '.join(sorted(dists))}), "
                            "which tools/requirements.txt does not pin")

    for problem in problems:
        print(f"check_requirements: {problem}")
    if problems:
        sys.exit(1)
    print(f"check_requirements: {len(pinned)} pins, all installed at their versions")


if __name__ == "__main__":
    main()
