"""constraints.txt (what `make setup` installs) against pyproject.toml (what pip users get), and the
script that writes it (tools/constraints.py)."""

import importlib.util
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("constraints_tool", ROOT / "tools" / "constraints.py")
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
PYTHONS = [c.rsplit(":: ", 1)[1] for c in PROJECT["classifiers"] if c.count(".") == 1 and ":: 3." in c]


def pins_for(python: str) -> dict[str, str]:
    """The version constraints.txt holds each package to on ``python`` (its markers evaluated there)."""
    out: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text("utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        req = Requirement(line)
        if req.marker and not req.marker.evaluate({"python_version": python, "python_full_version": python + ".0"}):
            continue
        (spec,) = req.specifier
        assert spec.operator == "==", line
        assert canonicalize_name(req.name) not in out, f"{req.name} pinned twice on Python {python}"
        out[canonicalize_name(req.name)] = spec.version
    return out


def test_the_classifiers_name_the_pythons_requires_python_admits():
    assert PYTHONS == ["3.11", "3.12", "3.13"]
    assert PROJECT["requires-python"] == f">={PYTHONS[0]}"


@pytest.mark.parametrize("python", PYTHONS)
def test_every_supported_python_gets_pins_that_satisfy_the_ranges(python):
    """On each supported Python, every dependency of louder and its test extra is pinned once, to a
    version its range in pyproject.toml admits (the pins are a tested point inside the ranges)."""
    pins = pins_for(python)
    env = {"python_version": python, "python_full_version": python + ".0", "extra": "test"}
    for line in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"]:
        req = Requirement(line)
        if req.marker and not req.marker.evaluate(env):
            continue
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not pinned for Python {python}"
        assert req.specifier.contains(pins[name], prereleases=True), f"{req.name}=={pins[name]} not in {req}"
    assert pins["pip"]  # the installer too


def test_mesa_is_the_newest_a_python_can_have():
    """Mesa 3.4 and later need Python 3.12: the oldest Python is held at 3.3, the others at 3.4+."""
    assert pins_for("3.11")["mesa"].startswith("3.3.")
    assert all(tuple(map(int, pins_for(p)["mesa"].split(".")[:2])) >= (3, 4) for p in PYTHONS[1:])


def test_versions_that_differ_get_markers_for_the_pythons_between_tested_ones():
    a = ((3, 11), {"mesa": ("Mesa", "3.3.1"), "pip": ("pip", "25.0"), "old": ("old", "1")})
    b = ((3, 13), {"mesa": ("Mesa", "3.5.1"), "pip": ("pip", "25.0"), "new": ("new", "2")})
    assert tool.constraints([b, a]) == [
        "Mesa==3.3.1 ; python_version <= \"3.11\"",
        "Mesa==3.5.1 ; python_version > \"3.11\"",
        "new==2 ; python_version > \"3.11\"",
        "old==1 ; python_version <= \"3.11\"",
        "pip==25.0"]
    c = ((3, 12), {"mesa": ("Mesa", "3.5.1"), "pip": ("pip", "25.0")})
    lines = tool.constraints([a, b, c])
    assert lines[:2] == ["Mesa==3.3.1 ; python_version <= \"3.11\"", "Mesa==3.5.1 ; python_version > \"3.11\""]
    assert "new==2 ; python_version > \"3.12\"" in lines
    for line in lines:  # every marker is one pip reads
        if ";" in line:
            Marker(line.split(";", 1)[1])
    with pytest.raises(SystemExit, match="two venvs of one Python"):
        tool.constraints([a, a])


def test_the_script_reads_this_venv():
    python, pins = tool.freeze(Path(sys.prefix))
    assert python == sys.version_info[:2]
    assert "louder" not in pins and "wheel" not in pins and "pip" in pins
    assert ("setuptools" in pins) == (importlib.util.find_spec("setuptools") is not None)
    assert pins["numpy"][1] == __import__("numpy").__version__
