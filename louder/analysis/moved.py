"""The modules the analysis had before its layout of engine / stats / report (issue 47), each still
importable by its old name for a while: ``import louder.analysis.registry`` gives
``louder.analysis.engine.registry`` itself (the same module object, so a measure registered through
either name is one measure) with a ``FutureWarning`` naming the new path. What has moved on again
(``ONWARD``: a figure of ``louder.analysis.figures`` now in its measure's module) is served by the old
name too, with the same warning."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

# the old module (under louder.analysis) → where it lives now
MOVED = {
    "registry": "engine.registry", "select": "engine.select", "inputs": "engine.inputs",
    "options": "engine.options", "run": "engine.run",
    **{m: f"stats.{m}" for m in (
        "intervals", "power", "prob_dpd", "regression", "rates", "keys", "sequential", "weat", "choices", "cases",
        "sequential_cases", "contrast", "directions", "anchoring", "calibration", "comparison", "conditional",
        "discrimination", "fidelity", "interventions", "network", "persona_audit", "population", "rationales",
        "reasoning", "robustness", "sensitivity", "voices")},
    "bai_stats": "stats.bai", "probe_stats": "stats.bai",
    "html": "report.html", "figures": "report.draw", "palette": "report.palette", "words": "report.words",
    "findings": "report.findings", "comparison_report": "report.comparison",
}
PACKAGE = "louder.analysis"
# what an old module held that has since moved on to a measure's own module (issue 47: a measure's figure
# lives in the measure): the old module's name still serves it, with the same warning
ONWARD = {"figures": {**dict.fromkeys(("dpd_figure",), "measures.cases"),
                      **dict.fromkeys(("rates_figure", "choices_figure"), "measures.attributes"),
                      "ablation_figure": "measures.ablation", "directions_figure": "measures.directions",
                      "sibling_figure": "measures.bai",
                      **dict.fromkeys(("intersection_heatmap", "odds_ratio_figure"), "measures.population")}}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name of ``MOVED`` and loads it as the module it moved to."""

    def find_spec(self, fullname, path=None, target=None):
        head, _, old = fullname.rpartition(".")
        if head != PACKAGE or old not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        old = spec.name.rpartition(".")[2]
        new = f"{PACKAGE}.{MOVED[old]}"
        warnings.warn(f"{spec.name} has moved to {new}; import it from there (the old name goes in a later "
                      "release)", FutureWarning, stacklevel=2)
        module = importlib.import_module(new)
        if old not in ONWARD:
            return module
        shim = types.ModuleType(spec.name, module.__doc__)

        def attribute(name: str):
            if name in ONWARD[old]:
                home = f"{PACKAGE}.{ONWARD[old][name]}"
                warnings.warn(f"{spec.name}.{name} has moved to {home}; import it from there", FutureWarning,
                              stacklevel=2)
                return getattr(importlib.import_module(home), name)
            return getattr(module, name)

        shim.__getattr__ = attribute
        return shim

    def exec_module(self, module):
        pass  # the module it moved to is already executed


def install() -> None:
    """Put the finder on the import path once (``louder.analysis`` does at import)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
