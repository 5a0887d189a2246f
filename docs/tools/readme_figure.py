"""Make docs/assets/dpd-per-case.svg, the figure on the README and the site's start page.

It is the report's "DPD per case" figure (louder.analysis.measures.cases.dpd_figure: a forest plot of each
case's DPD with its 95 % interval, implicit beside explicit, the parity threshold and Holm marks),
drawn as the report draws it (SVG, louder.analysis.report.html.svg), from a run on the
fake model with a bias planted in the agents' decisions: an agent whose prompt names "female" picks
the first choice with probability 0.9, so the gender cases show a disparity and the others none.
The explicit question is answered by the unbiased fake model (every explicit prompt lists every
attribute, so a planted word would bias all of them alike), which gives the figure the shape of the
paper's finding: disparities in what agents do that the direct question does not show. The
numbers come from the fake model, not from an LLM; the figure shows what the report draws, not a
finding. Run from the repository root:

    python docs/tools/readme_figure.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "docs" / "assets" / "dpd-per-case.svg"


def main() -> None:
    import pandas as pd

    from louder.analysis import analyze
    from louder.analysis.measures.cases import dpd_figure
    from louder.analysis.report.html import svg
    from louder.analysis.stats.cases import with_holm
    from louder.config import build_config
    from louder.probes.explicit import run_explicit
    from louder.simulation import run_experiment

    config = build_config({
        "models": ["fake:seed=1,bias=female:0.9"],
        "scenarios": ["emergency_response", "authority_compliance", "career_path_selection"],
        "groups": ["gender_identity", "political_ideology"],
        "agents": 50, "probe_trials": 150, "seed": 0,
    })
    unbiased = config.model_copy(update={"models": build_config({"models": ["fake:seed=1"]}).models})
    with tempfile.TemporaryDirectory() as agents, tempfile.TemporaryDirectory() as asked:
        run_experiment(config, agents)
        run_explicit(unbiased, asked)  # its own folder: a run folder holds one write's files (issue 36)
        implicit = analyze(agents, write=False).tables["cases"]
        explicit = analyze(asked, write=False).tables["cases"]
    # one panel: the explicit answers beside the agents', Holm across all of them as in one run folder
    explicit = explicit.assign(model=config.models[0].spec)
    cases = with_holm(pd.concat([implicit, explicit], ignore_index=True))
    fig = dpd_figure(cases)
    fig.axes[0].set_title("DPD per case on louder's fake model: a bias planted in the agents' decisions "
                          "(female: 0.9), 50 agents per attribute", fontsize=9, loc="left")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(svg(fig))
    print(f"wrote {OUT}")
    print(cases[["kind", "scenario", "group", "dpd", "threshold", "significant"]].to_string(index=False))


if __name__ == "__main__":
    main()
