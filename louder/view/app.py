"""The Solara page of ``louder view``: the network (nodes coloured by decision, marked by
attribute), a round slider, and the per-attribute rates and DPD (with its interval band) over
rounds, for the LLM and for the no-LLM control. ``solara run louder.view.app`` serves ``Page``
for the run folder in ``LOUDER_VIEW_RUN``."""

from __future__ import annotations

import html
import os

import solara
from matplotlib.figure import Figure
from mesa.visualization import SolaraViz, SpaceRenderer
from mesa.visualization.utils import force_update

from louder.view.data import load_view_data, rates_over_rounds
from louder.view.model import ReplayModel, portrayal


def RoundsChart(model: ReplayModel):
    """Rates per attribute over rounds (solid: LLM, dashed: control) and the DPD with its band."""
    rates = rates_over_rounds(model.decisions, model.control)
    band = model.band
    fig = Figure(figsize=(6, 6.5), layout="constrained")
    ax, bx = fig.subplots(2, 1, sharex=True)
    for i, a in enumerate(model.attributes):
        for source, style in (("LLM", "-"), ("control", "--")):
            r = rates[(rates["attribute"] == a) & (rates["source"] == source)]
            if len(r):
                ax.plot(r["round"], r["rate"], style, color=f"C{i}", marker=model.marker[a],
                        label=f"{a} ({source})")
    ax.set_ylabel("target rate")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    bx.fill_between(band["round"], band["low"], band["high"], alpha=0.25, color="C7", label="95 % interval")
    bx.plot(band["round"], band["dpd"], "-o", color="black", label="DPD (LLM)")
    bx.set_ylabel("DPD")
    bx.set_xlabel("round")
    bx.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    for x in (ax, bx):
        x.axvline(model.round, color="grey", lw=0.8)
    return solara.FigureMatplotlib(fig)


SHAPES = {"o": "circle", "s": "square", "^": "triangle", "D": "diamond", "v": "down-triangle", "P": "plus",
          "X": "cross", "*": "star", "h": "hexagon", "<": "left-triangle", ">": "right-triangle", "p": "pentagon"}


def Caption(model: ReplayModel):
    """The round slider and what is drawn. The slider reads the model's round at every redraw, so
    it follows Step and ▶; moving it sets the round and redraws every component."""
    shapes = ", ".join(f"{SHAPES[model.marker[a]]} {a}" for a in model.attributes)
    note = (f"a seeded sample of {len(model.agents):,} of its {model.n_nodes:,} nodes is drawn"
            if model.sampled else f"all {model.n_nodes:,} nodes are drawn")

    def go(r: int) -> None:
        model.goto(r)
        force_update()

    with solara.Column() as main:
        solara.SliderInt("Round", value=model.round, min=0, max=model.last_round, step=1, on_value=go,
                         tick_labels="end_points")
        # Plain HTML, not solara.Markdown: Markdown loads KaTeX and Mermaid from the CDN on every
        # mount, which an offline page answers with 404s and a requirejs error.
        solara.HTML(tag="div", unsafe_innerHTML=(
            f"<b>{html.escape(model.case)}</b> — round {model.round} of {model.last_round}; {note}. "
            "Red: target decision, blue: another choice, grey: no valid answer; "
            f"shapes: {html.escape(shapes)}. Replayed from the run folder: no model is called. "
            "▶ stops at the last round; Reset starts the chosen case again at round 0."))
    return main


def make_page(run_dir: str, max_nodes: int = 2000):
    data = load_view_data(run_dir)
    model = ReplayModel(run_dir, data.cases[0], 0, max_nodes)
    renderer = SpaceRenderer(model, backend="matplotlib")
    # Cells are drawn by the agents on them; the structure contributes only the ties.
    structure = {"node_kwargs": {"node_size": 0}, "edge_kwargs": {"alpha": 0.3, "width": 0.6, "style": "-"}}
    if hasattr(renderer, "setup_structure"):  # Mesa ≥ 3.4: set up first, then draw (arguments to draw deprecated)
        renderer.setup_structure(**structure).setup_agents(portrayal)
        renderer.draw_structure()
        renderer.draw_agents()
    else:
        renderer.draw_structure(**structure)
        renderer.draw_agents(portrayal)
    params = {
        "run_dir": run_dir,
        "max_nodes": max_nodes,
        "case": {"type": "Select", "value": data.cases[0], "values": list(data.cases), "label": "Case"},
    }
    return SolaraViz(model, renderer, components=[RoundsChart, Caption], model_params=params,
                     name="louder: influence on a network")


@solara.component
def Page():
    return make_page(os.environ["LOUDER_VIEW_RUN"], int(os.environ.get("LOUDER_VIEW_MAX_NODES", "2000")))
