"""Write constraints.txt (to stdout) from the venvs the test suite passed in, one per Python.

    python3 tools/constraints.py .venv-3.11 .venv-3.13 > constraints.txt      (or: make constraints VENVS=...)

Every package is pinned to the version its venv had (``pip freeze``; louder itself and the build
tool wheel left out — setuptools is pinned: the test extra builds a package with the venv's own). Where the venvs differ, each version carries a marker for the
Pythons it covers: a tested Python covers itself and the untested ones down to the next tested
Python below it; the newest also covers the ones after it. With venvs on 3.11 and 3.13, a 3.12 gets
3.13's versions. ``make setup`` installs with these constraints; pip users get the ranges in
pyproject.toml.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SKIP = {"louder", "wheel"}


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def freeze(venv: Path) -> tuple[tuple[int, int], dict[str, tuple[str, str]]]:
    """(Python major.minor, {normalised name: (name as pip spells it, version)}) of one venv."""
    py = str(venv / "bin" / "python")
    version = subprocess.run([py, "-c", "import sys; print(*sys.version_info[:2])"], check=True,
                             capture_output=True, text=True).stdout.split()
    out = subprocess.run([py, "-m", "pip", "freeze", "--all", "--exclude-editable"], check=True,
                         capture_output=True, text=True).stdout
    pins = {}
    for line in out.splitlines():
        name, sep, ver = line.partition("==")
        if _key(name.split(" @ ")[0]) in SKIP:
            continue
        if not sep:  # a direct reference (name @ url): not a release pip can be held to
            raise SystemExit(f"{venv}: {line!r} is not a released version; install releases only")
        pins[_key(name)] = (name, ver.strip())
    return (int(version[0]), int(version[1])), pins


def _marker(lo: tuple[int, int] | None, hi: tuple[int, int] | None) -> str:
    """Pythons above ``lo`` up to ``hi`` (None: unbounded on that side)."""
    parts = ([f'python_version > "{lo[0]}.{lo[1]}"'] if lo else []) + ([f'python_version <= "{hi[0]}.{hi[1]}"']
                                                                        if hi else [])
    return " and ".join(parts)


def constraints(venvs: list[tuple[tuple[int, int], dict[str, tuple[str, str]]]]) -> list[str]:
    venvs = sorted(venvs)
    pythons = [v for v, _ in venvs]
    if len(set(pythons)) != len(pythons):
        raise SystemExit(f"two venvs of one Python: {pythons}")
    # segment i covers the Pythons above pythons[i-1] up to pythons[i] (the last one: and after)
    bounds = [(pythons[i - 1] if i else None, pythons[i] if i < len(pythons) - 1 else None)
              for i in range(len(pythons))]
    lines = []
    for key in sorted({k for _, pins in venvs for k in pins}):
        per = [pins.get(key) for _, pins in venvs]
        name = next(p[0] for p in per if p)
        if all(p and p[1] == per[0][1] for p in per):
            lines.append(f"{name}=={per[0][1]}")
            continue
        i = 0
        while i < len(per):  # runs of neighbouring segments with one version share a marker
            j = i
            while j + 1 < len(per) and per[j + 1] == per[i]:
                j += 1
            if per[i]:
                lines.append(f"{name}=={per[i][1]} ; {_marker(bounds[i][0], bounds[j][1])}")
            i = j + 1
    return lines


def main(args: list[str]) -> None:
    if not args:
        raise SystemExit(__doc__)
    venvs = [freeze(Path(a)) for a in args]
    tested = ", ".join(f"{v[0]}.{v[1]}" for v, _ in sorted(venvs))
    print("# The versions louder's test suite last passed with, on Python " + tested + ".")
    print("# `make setup` installs with them; refresh on purpose (docs/getting-started/index.md):")
    print("#   make constraints VENVS=\"<one venv per Python, each where the whole suite passed>\"")
    print("\n".join(constraints(venvs)))


if __name__ == "__main__":
    main(sys.argv[1:])
