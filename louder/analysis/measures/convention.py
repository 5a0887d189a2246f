"""Conventions (issue 48, docs/conventions.md): what `louder analyze` reads in a convention run — populations
of agents playing the naming game of Ashery, Aiello & Baronchelli (Science Advances 2025).

* ``convention_populations`` — per population: whether and when a convention formed, on what, whether the
  committed minority overturned it, and every answer by status;
* ``convention_shares`` — per population × step × option: the share of the step's valid picks (what the
  report and ``louder view`` draw: a convention forming);
* ``convention_bias`` — per arm, the LLM beside the minimal model (the same game without an LLM, with the
  LLM's own individual prior): the collective-bias verdict — ``none``, ``follows the prior``, ``amplifies``,
  ``reverses``, ``emerges`` or ``underpowered`` — with the prior and winner shares and their intervals, and
  the time to convention;
* ``convention_tipping`` and ``convention_critical_mass`` — committed minorities: the share of populations
  overturned per fraction p (LLM, minimal model, binary agreement model) and the critical mass of the sweep;
* ``convention_force`` — the majority force β (De Marzo, Castellano & Garcia 2024) per arm, model and
  attribute, and whether the members' βs differ;
* ``convention_members`` — per model of a mixed population and per attribute of personas: the answers by
  status, the member's own prior and how often the conventions went its way (the pull, with its interval);
* ``convention_answers`` — every agent's answers by status.

The statistics are ``louder.analysis.stats.convention``'s; the minimal models ``convention_models``'s.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from louder.analysis.engine.declarations import Cell, Column, Console, Figure, Finding, Input, Measure, Option, Table
from louder.analysis.engine.registry import register
from louder.analysis.report import palette as P
from louder.analysis.report.console import key, number
from louder.analysis.report.html import note, section, table
from louder.analysis.stats import convention as C

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn
    from matplotlib.figure import Figure as MplFigure

TITLE = "Conventions"
INPUTS = (Input("plays", "convention.parquet", raw=True, doc="a convention run's plays: one row per agent × step"),
          Input("agents", "convention_agents.parquet", raw=True, doc="a convention run's agents and personas"))
MOST_ARMS = 12  # shares-over-time figures drawn (the table has every arm)


def _design(a) -> C.Design:
    return C.Design.of(a.manifests.get("simulation") or {})


def build(a) -> dict[str, pd.DataFrame]:
    design = _design(a)
    if not design.options:
        a.missing.append("convention: the manifest has no `convention` design; re-run the same `louder run` command")
        return {}
    o = a.options
    plays = a.plays
    pops = C.population_table(plays, design, o.window, o.agree)
    out = {"convention_populations": pops, "convention_shares": C.share_table(plays, list(design.options)),
           "convention_bias": C.bias_table(plays, pops, design, o.window, o.agree, o.minimal, o.replicates,
                                           a.bootstrap, a.seed),
           "convention_force": C.force_table(plays, list(design.options)),
           "convention_members": C.member_table(plays, pops, list(design.options)),
           "convention_answers": C.answer_table(plays)}
    if design.committed_option is not None:
        tip, crit = C.tipping_tables(plays, pops, design, o.window, o.agree, o.minimal, o.replicates, a.bootstrap,
                                     a.seed)
        out |= {"convention_tipping": tip, "convention_critical_mass": crit}
    return out


# --- figures --------------------------------------------------------------------------------------------

def shares_figure(shares: pd.DataFrame, pops: pd.DataFrame, label: str) -> MplFigure | None:
    """A convention forming: per option, the share of each step's valid picks in every population (thin)
    and their mean (bold); each population's formation step marked on the top."""
    from matplotlib.figure import Figure as MplFigure

    if shares is None or shares.empty:
        return None
    fig = MplFigure(figsize=(6.5, 3.4), layout="constrained")
    ax = fig.subplots()
    options = list(dict.fromkeys(shares["option"]))
    for i, x in enumerate(options):
        s = shares[shares["option"] == x]
        for _, g in s.groupby("population"):
            ax.plot(g["step"], g["share"], color=P.series(i), lw=0.6, alpha=0.3)
        mean = s.groupby("step")["share"].mean()
        ax.plot(mean.index, mean.to_numpy(), color=P.series(i), lw=2.2, label=f'"{x}" (mean of populations)')
    formed = pops["step"].dropna() if pops is not None and len(pops) else pd.Series(dtype=float)
    if len(formed):
        ax.plot(formed, np.full(len(formed), 1.03), "v", color=P.BLACK, ms=4, clip_on=False,
                label="a convention formed")
    ax.set_ylim(-0.02, 1.06)
    ax.set_xlabel("step (every agent plays once per step)")
    ax.set_ylabel("share of the step's valid picks")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(f"{label}: a convention forming", fontsize=9)
    return fig


def _who(rows: pd.DataFrame, r) -> str:
    """The row's model before its label, when the figure has several (one model: the title says it)."""
    return f"{r['model']} " if rows["model"].nunique() > 1 else ""


def _short(label: str, most: int = 60) -> str:
    """A tick label cut to ``most`` characters (the tables carry the whole)."""
    return label if len(label) <= most else label[: most - 1] + "…"


def bias_figure(bias: pd.DataFrame) -> MplFigure | None:
    """Per arm and source: the option's share among the agents' picks alone (the prior, open) and among the
    conventions (filled), each with its 95 % interval."""
    from matplotlib.figure import Figure as MplFigure

    from louder.analysis.report.draw import interval

    if bias is None or bias.empty:
        return None
    rows = bias.reset_index(drop=True)
    fig = MplFigure(figsize=(6.5, max(2.4, 1.2 + 0.45 * len(rows))), layout="constrained")
    ax = fig.subplots()
    for i, r in rows.iterrows():
        y = len(rows) - 1 - i
        color = P.IMPLICIT if r["source"] == "LLM" else P.GREY
        interval(ax, r["prior_share"], y + 0.15, r["prior_low"], r["prior_high"], color=P.EXPLICIT)
        interval(ax, r["winner_share"], y - 0.15, r["winner_low"], r["winner_high"], color=color)
    ax.set_yticks(range(len(rows)), [_short(f"{_who(rows, r)}N={r['size']} — {r['source']}: {r['verdict']} "
                                            f"({r['option'] or '–'})") for _, r in rows.iloc[::-1].iterrows()],
                  fontsize=7)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("share of the option read: agents alone (blue, upper) and conventions (lower)")
    one = f"{rows['model'].iloc[0]}: " if rows["model"].nunique() == 1 else ""
    ax.set_title(f"{one}collective bias — the individual prior against the conventions (95 % intervals)", fontsize=9)
    return fig


def tipping_figure(tip: pd.DataFrame, crit: pd.DataFrame, label: str) -> MplFigure | None:
    """Share of populations overturned per committed fraction, per source, with Wilson intervals; the
    critical mass's interval shaded for the LLM."""
    from matplotlib.figure import Figure as MplFigure

    if tip is None or tip.empty:
        return None
    fig = MplFigure(figsize=(6.2, 3.4), layout="constrained")
    ax = fig.subplots()
    for i, (source, g) in enumerate(tip.groupby("source", sort=False)):
        g = g.sort_values("fraction")
        err = np.vstack([g["share"] - g["low"], g["high"] - g["share"]]).clip(min=0)
        color = P.IMPLICIT if source == "LLM" else P.series(i)
        ax.errorbar(g["fraction"], g["share"], yerr=np.nan_to_num(err), fmt="o-", capsize=3, color=color,
                    label=source)
    c = crit[crit["source"] == "LLM"] if crit is not None and len(crit) else None
    if c is not None and len(c) and pd.notna(c["low"].iloc[0]):
        ax.axvspan(c["low"].iloc[0], c["high"].iloc[0], color=P.IMPLICIT, alpha=0.12,
                   label="LLM critical mass (95 % interval)")
    ax.axhline(0.5, color=P.LIGHT, ls="--", lw=0.8)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("committed fraction p")
    ax.set_ylabel("populations overturned")
    ax.legend(fontsize=7)
    ax.set_title(f"{label}: committed minorities", fontsize=9)
    return fig


def sizes_figure(bias: pd.DataFrame) -> MplFigure | None:
    """Group size: per N, the winner share of the option read (left) and the mean step of formation (right),
    LLM and minimal model, with their intervals."""
    from matplotlib.figure import Figure as MplFigure

    if bias is None or bias.empty or bias["size"].nunique() < 2:
        return None
    fig = MplFigure(figsize=(7, 3), layout="constrained")
    left, right = fig.subplots(1, 2)
    for i, ((model, source), g) in enumerate(bias.groupby(["model", "source"], sort=False)):
        g = g.sort_values("size")
        color = P.IMPLICIT if source == "LLM" else P.series(i)
        for ax, (est, lo, hi) in ((left, ("winner_share", "winner_low", "winner_high")),
                                  (right, ("mean_step", "step_low", "step_high"))):
            err = np.vstack([g[est] - g[lo], g[hi] - g[est]]).clip(min=0)
            ax.errorbar(g["size"], g[est], yerr=np.nan_to_num(err), fmt="o-", capsize=3, color=color,
                        label=f"{model} — {source}")
    left.set_xscale("log")
    right.set_xscale("log")
    left.set_xlabel("N (agents per population)")
    right.set_xlabel("N (agents per population)")
    left.set_ylabel("winner share of the option read")
    right.set_ylabel("mean step a convention formed")
    left.set_ylim(-0.02, 1.02)
    right.legend(fontsize=6)
    fig.suptitle("Group size: the conventions and their time, per N", fontsize=9)
    return fig


def force_figure(force: pd.DataFrame) -> MplFigure | None:
    """The majority force β per arm and member with its 95 % interval; 0 (memory ignored) and 1 dashed."""
    from matplotlib.figure import Figure as MplFigure

    from louder.analysis.report.draw import interval

    if force is None or force.empty or force["beta"].isna().all():
        return None
    rows = force.dropna(subset=["beta"]).reset_index(drop=True)
    fig = MplFigure(figsize=(6.5, max(2.4, 1.2 + 0.3 * len(rows))), layout="constrained")
    ax = fig.subplots()
    for i, r in rows.iterrows():
        interval(ax, r["beta"], len(rows) - 1 - i, r["low"], r["high"], color=P.IMPLICIT)
    ax.axvline(0, color=P.BLACK, ls="--", lw=0.8)
    ax.axvline(1, color=P.LIGHT, ls="--", lw=0.8)
    ax.set_yticks(range(len(rows)), [_short(f"{_who(rows, r)}N={r['size']} p={r['fraction']:g} — {r['member']}")
                                     for _, r in rows.iloc[::-1].iterrows()], fontsize=7)
    ax.set_xlabel("β: logit P(pick x) = a_x + 4β · (share of x in memory)")
    one = f"{rows['model'].iloc[0]}: " if rows["model"].nunique() == 1 else ""
    ax.set_title(f"{one}majority force (95 % interval, clustered by agent)", fontsize=9)
    return fig


# --- the report section -----------------------------------------------------------------------------------

def _pct(x) -> str:
    return "–" if x is None or pd.isna(x) else f"{100 * x:.0f} %"


def _arm_label(model, size, fraction) -> str:
    return f"{model}, N = {size}" + (f", p = {fraction:g}" if fraction else "")


def bias_sentence(r) -> str:
    """One sentence on one row of ``convention_bias``."""
    who = f"{r['model']} (N = {r['size']})"
    if r["verdict"] == C.UNDERPOWERED:
        return (f"{who}: underpowered — {r['formed']} of {r['populations']} populations formed a convention and "
                f"{r['n_prior']} picks were made with an empty memory; too few to read a collective bias.")
    read = (f'"{r["option"]}" won {_pct(r["winner_share"])} of the {r["formed"]} conventions (95 % interval '
            f'{_pct(r["winner_low"])}–{_pct(r["winner_high"])}) against {_pct(r["prior_share"])} of the agents\' '
            f'picks alone ({_pct(r["prior_low"])}–{_pct(r["prior_high"])})')
    what = {C.NONE: "no collective bias: neither the agents alone nor the conventions prefer an option",
            C.EMERGES: "a collective bias <b>emerges</b> that no agent shows alone",
            C.AMPLIFIES: "the conventions <b>amplify</b> the agents' individual preference",
            C.REVERSES: "the conventions <b>reverse</b> the agents' individual preference",
            C.FOLLOWS: "the conventions <b>follow</b> the agents' individual preference"}[r["verdict"]]
    return f"{who}: {what} — {read}."


def report_section(a) -> str:
    t = a.tables
    pops, bias = t.get("convention_populations"), t.get("convention_bias")
    if pops is None:
        return ""
    design = _design(a)
    o = a.options
    parts = [
        note("Each population's agents play a coordination game (the naming game of Ashery, Aiello & Baronchelli, "
             "Science Advances 2025): every step pairs them at random, both agents of a pair pick one of the options "
             f"({', '.join(html.escape(x) for x in design.options)}) at once, and win points when they match and lose "
             "points when they differ; each remembers only its last rounds. Nothing in the prompt mentions a population "
             "or a convention."),
        note(f"<b>A convention has formed</b> at the first step after which a share ≥ {o.agree:g} of the last "
             f"{'3N' if not o.window else o.window} interactions agreed on one option (the option is the winner). "
             "<b>The individual prior</b> is every pick made with an empty memory. <b>Collective bias</b> compares "
             "the winners with the prior (Holm-corrected exact tests, Fisher's test for the comparison): none, "
             "follows the prior, amplifies, reverses, emerges (no individual preference, a collective one) or "
             "underpowered (fewer than 10 conventions or 20 empty-memory picks). <b>The minimal model</b> "
             f"({html.escape(C.MINIMAL[o.minimal])}) plays the same design without an LLM, its empty-memory picks "
             "drawn from the LLM's own prior: what the LLM adds beyond its prior is the difference."),
    ]
    arms = list(pops.groupby(C.ARM, sort=False))
    for arm, p in arms[:MOST_ARMS]:
        s = t["convention_shares"]
        s = s[(s[C.ARM] == pd.Series(dict(zip(C.ARM, arm)))).all(axis=1)]
        parts += [f"<h3>{html.escape(_arm_label(*arm))}</h3>", a.figure("shares", s, p, _arm_label(*arm))]
    if len(arms) > MOST_ARMS:
        parts.append(note(f"{len(arms) - MOST_ARMS} more arms: convention_shares.csv has every one."))
    if bias is not None and len(bias):
        llm = bias[bias["source"] == "LLM"]
        parts += ["<h3>Collective bias</h3>",
                  "<ul>" + "".join(f"<li>{bias_sentence(r)}</li>" for _, r in llm.iterrows()) + "</ul>",
                  a.figure("bias", bias), a.figure("sizes", bias), table(bias, scroll=True)]
    tip, crit = t.get("convention_tipping"), t.get("convention_critical_mass")
    if tip is not None and len(tip):
        parts += ["<h3>Committed minorities</h3>",
                  note("A fraction p of each population's agents always plays the committed option and asks no model. "
                       "A population is <b>overturned</b> when a convention on the committed option forms within the "
                       "steps. The <b>critical mass</b> is the smallest swept p that overturns at least half of the "
                       "populations (isotonic fit), with an interval from a parametric bootstrap of the sweep; the "
                       "crossing interpolates to one half. References: 10 % in the binary agreement model on a "
                       "complete graph (Xie et al. 2011), about 25 % in people's naming games (Centola et al. 2018).")]
        for (model, size), g in tip.groupby(["model", "size"], sort=False):
            c = crit[(crit["model"] == model) & (crit["size"] == size)] if crit is not None else None
            parts.append(a.figure("tipping", g, c, _arm_label(model, size, 0)))
        parts += [table(crit), table(tip, scroll=True)]
    members = t.get("convention_members")
    if members is not None and len(members):
        parts += ["<h3>Models and attributes</h3>",
                  note("Per model of the population (a mix: several) and per attribute (personas): every answer by "
                       "status, the member's own prior (its favourite among its empty-memory picks), and the winner "
                       "share of that favourite against the pooled prior's share of it — the <b>pull</b> the member's "
                       "preference had on the conventions beyond its weight in the population (Wilson interval)."),
                  table(members, scroll=True)]
    force = t.get("convention_force")
    if force is not None and len(force):
        parts += ["<h3>Majority force</h3>",
                  note("β of logit P(pick x) = a_x + 4β · (share of x among the partners' picks remembered): for two "
                       "options De Marzo, Castellano & Garcia's (2024) P = ½[1 + tanh(β m)]. 0: the memory is ignored; "
                       "above 1 a majority grows into consensus in mean field. <code>differ_p</code>: the Wald test "
                       "that the models' (attributes') βs are equal."),
                  a.figure("force", force), table(force, scroll=True)]
    answers = t.get("convention_answers")
    if answers is not None:
        bad = answers[answers["n_valid"] < answers["answers"]]
        parts += ["<h3>Every answer</h3>",
                  note(f"{int(answers['answers'].sum()):,} answers of {len(answers):,} agents: "
                       + ", ".join(f"{int(answers[f'n_{s}'].sum()):,} {s}" for s in C.STATUS)
                       + f". {len(bad)} agents had an answer that was not valid" + (" (below)." if len(bad) else ".")
                       + " A committed agent asks no model; an agent whose persona failed is not asked and its "
                         "plays carry the persona's status."),
                  table(bad.head(200), scroll=True), table(pops, scroll=True)]
    return section(TITLE, *parts)


# --- findings and console -------------------------------------------------------------------------------

def findings(a) -> list[Finding]:
    out = []
    bias = a.tables.get("convention_bias")
    if bias is not None:
        for _, r in bias[bias["source"] == "LLM"].iterrows():
            text = html.unescape(bias_sentence(r).replace("<b>", "").replace("</b>", ""))
            minimal = bias[(bias["model"] == r["model"]) & (bias["size"] == r["size"]) & (bias["source"] != "LLM")]
            if len(minimal) and r["verdict"] != C.UNDERPOWERED and pd.notna(minimal["winner_share"].iloc[0]):
                m = minimal.iloc[0]
                text += (f" The minimal model with the same prior: \"{m['option']}\" in {_pct(m['winner_share'])} "
                         f"({m['verdict']}).")
            out.append(Finding(text, TITLE, str(r["model"])))
    crit = a.tables.get("convention_critical_mass")
    if crit is not None:
        for (model, size), g in crit.groupby(["model", "size"], sort=False):
            llm = g[g["source"] == "LLM"]
            if not len(llm):
                continue
            r = llm.iloc[0]
            said = (f"from p = {r['critical_mass']:g} (crossing {r['crossing']:.3f}, 95 % interval {r['low']:g}–"
                    f"{r['high']:g})" if r["where"] == "within the sweep" else
                    f"at every swept p (≤ {r['high']:g})" if r["where"].startswith("at or below") else
                    f"at no swept p (the critical mass is above {r['low']:g})")
            others = "; ".join(f"{s['source']}: " + (f"{s['crossing']:.3f}" if s["where"] == "within the sweep" else
                                                     s["where"]) for _, s in g[g["source"] != "LLM"].iterrows())
            out.append(Finding(f"N = {size}: a committed minority overturned the convention in at least half of the "
                               f"populations {said}" + (f" ({others})." if others else "."), TITLE, str(model)))
    members = a.tables.get("convention_members")
    if members is not None and len(members):
        mixed = members[members["kind"] == "model"]
        for (model, size, fraction), g in mixed.groupby(C.ARM, sort=False):
            if len(g) < 2:
                continue
            for _, r in g.iterrows():
                if pd.isna(r["pull"]):
                    continue
                out.append(Finding(
                    f"{r['member']} ({r['agents']} agents of {_arm_label(model, size, fraction)}): its favourite "
                    f"\"{r['favourite']}\" won {_pct(r['winner_share'])} of the conventions against its "
                    f"{_pct(r['pooled_share'])} of the pooled prior — a pull of {100 * r['pull']:+.0f} points (95 % "
                    f"interval {100 * r['pull_low']:+.0f} to {100 * r['pull_high']:+.0f}).", TITLE, str(model)))
    return out


def _verdict_style(r) -> str | None:
    return {C.AMPLIFIES: "bold red", C.REVERSES: "bold red", C.EMERGES: "bold red", C.UNDERPOWERED: "yellow"}.get(
        r["verdict"])


def _share(est: str, lo: str, hi: str):
    return lambda r: "–" if pd.isna(r[est]) else f"{_pct(r[est])} [{_pct(r[lo])}, {_pct(r[hi])}]"


CONSOLE = (
    Console("convention_bias", "Conventions: collective bias (the LLM beside the minimal model)", (
        key("model"), Cell("N", "size", number=True, priority=1),
        Cell("source", "source", priority=1), Cell("verdict", "verdict", priority=1, style=_verdict_style),
        Cell("option", "option", priority=1),
        Cell("prior [95 % CI]", _share("prior_share", "prior_low", "prior_high"), number=True, name="prior_share"),
        Cell("conventions [95 % CI]", _share("winner_share", "winner_low", "winner_high"), number=True,
             name="winner_share"),
        Cell("formed", lambda r: f"{r['formed']}/{r['populations']}", number=True, name="formed"),
        Cell("mean step", lambda r: number(r["mean_step"], 1), number=True,
             priority=3, name="mean_step")), position=90),
    Console("convention_critical_mass", "Conventions: the critical mass of the committed minority", (
        key("model"), Cell("N", "size", number=True, priority=1),
        Cell("source", "source", priority=1),
        Cell("critical mass", lambda r: "–" if pd.isna(r["critical_mass"]) else f"{r['critical_mass']:g}",
             number=True, priority=1, name="critical_mass"),
        Cell("crossing [95 % CI]", lambda r: number(r["crossing"]) +
             f" [{r['low']:g}, {r['high']:g}]", number=True, name="crossing"),
        Cell("where", "where", priority=3)), position=91),
)


def _checked_agree(v: float) -> str | None:
    return None if 0.5 < v <= 1 else "a share above 0.5 and at most 1 (at most one option can hold it)"


register(Measure(
    "convention", "coordination games: conventions, collective bias, committed minorities, majority force",
    tables=(
        Table("convention_populations", "Convention runs: one row per arm (model, N, committed fraction) × "
                                        "population.", (
            Column(("model", "size", "fraction", "population"), "the arm (a model, or a mix's label; N; the committed "
                                                                "fraction p) and the population"),
            Column(("agents", "committed_agents"), "its agents, and how many are committed"),
            Column("window", "w: the interactions the formation criterion reads (the option `window`, default 3N)"),
            Column(("formed", "step", "winner"), "whether a convention formed, the first step it held, and its option"),
            Column("overturned", "a committed minority's arm: the convention formed on the committed option"),
            Column(("last_top", "last_share"), "the most agreed option of the last w interactions and its share"),
            Column(("n_valid", "n_invalid", "n_refused", "n_error"), "every answer of the population by status"))),
        Table("convention_shares", "Convention runs: one row per arm × population × step × option.", (
            Column(("model", "size", "fraction", "population", "step"), "the arm, population and step"),
            Column("option", "the option"),
            Column(("picks", "valid_picks", "share"), "its picks, the step's valid picks, and its share of them"))),
        Table("convention_bias", "Convention runs: per arm without a committed minority × source (`LLM`, and the "
                                 "minimal model at the same design with the LLM's measured prior).", (
            Column(("model", "size", "source"), "the arm and the source"),
            Column("verdict", "`none`, `follows the prior`, `amplifies`, `reverses`, `emerges` or `underpowered`"),
            Column("option", "the option the verdict reads: the prior's favourite, else the winners'"),
            Column(("prior_share", "prior_low", "prior_high"), "its share among the empty-memory picks (Wilson)"),
            Column(("winner_share", "winner_low", "winner_high"), "its share among the conventions formed (Wilson)"),
            Column(("prior_p", "winner_p"), "the tests of no preference (Holm-adjusted over the two)"),
            Column("compare_p", "Fisher's exact test of the winner share against the prior share"),
            Column(("prior", "winners"), "the counts of each option"),
            Column(("n_prior", "populations", "formed"), "empty-memory picks, populations, conventions formed"),
            Column(("mean_step", "step_low", "step_high"), "the mean step a convention formed, with its bootstrap "
                                                           "interval"))),
        Table("convention_tipping", "Convention runs with a committed minority: one row per arm × source (`LLM`, the "
                                    "minimal model, the binary agreement model where it applies).", (
            Column(("model", "size", "fraction", "source"), "the arm and the source"),
            Column(("populations", "overturned"), "populations, and those overturned"),
            Column(("share", "low", "high"), "the share overturned, with its Wilson interval"))),
        Table("convention_critical_mass", "Convention runs with a committed-fraction sweep: one row per model × N × "
                                          "source.", (
            Column(("model", "size", "source"), "the model, N and source"),
            Column("critical_mass", "the smallest swept p that overturned at least half of the populations"),
            Column("crossing", "the isotonic fit interpolated to one half"),
            Column(("low", "high"), "its 95 % interval (parametric bootstrap of the sweep)"),
            Column("where", "`within the sweep`, `at or below the smallest p` or `above the sweep`"),
            Column("fractions", "the fractions swept"))),
        Table("convention_force", "Convention runs: one row per arm × member (all agents; each model of a mix; each "
                                  "attribute).", (
            Column(("model", "size", "fraction"), "the arm"),
            Column(("kind", "member"), "`all`, `model` or `attribute`, and which"),
            Column(("beta", "low", "high", "p_value"), "the majority force β, its cluster-robust 95 % interval and the "
                                                       "test of β = 0"),
            Column(("picks", "agents"), "the picks with a non-empty memory it rests on, and their agents"),
            Column("differ_p", "the Wald test that the members' βs are equal"))),
        Table("convention_members", "Convention runs: one row per arm × member (each model; each attribute).", (
            Column(("model", "size", "fraction"), "the arm"),
            Column(("kind", "member"), "`model` or `attribute`, and which"),
            Column(("agents", "committed_agents"), "its agents over the populations, and the committed ones"),
            Column(("n_valid", "n_invalid", "n_refused", "n_error", "answers"), "its answers by status, and all"),
            Column(("favourite", "prior_share", "prior_low", "prior_high", "n_prior"), "its own prior: its favourite "
                                                                                       "and its share (Wilson)"),
            Column(("winner_share", "winner_low", "winner_high", "formed"), "the favourite's share of the conventions"),
            Column("pooled_share", "the pooled prior's share of the favourite (what the members' shares predict)"),
            Column(("pull", "pull_low", "pull_high"), "winner share − pooled share, with the interval shifted"))),
        Table("convention_answers", "Convention runs: one row per agent that asks a model.", (
            Column(("model", "size", "fraction", "population", "agent"), "the agent"),
            Column(("agent_model", "attribute"), "its model and attribute"),
            Column(("n_valid", "n_invalid", "n_refused", "n_error", "answers"), "its answers by status, and all")))),
    build=build, inputs=INPUTS, needs=("plays",),
    options=(Option("agree", float, 0.9, "q: the share of the last w interactions that must agree on one option for "
                                         "a convention", check=_checked_agree),
             Option("window", int, 0, "w: interactions the formation criterion reads (0: 3N, the authors' code)",
                    check=lambda v: None if v >= 0 else "0 (3N) or a positive number of interactions"),
             Option("minimal", str, "naming_game", "the minimal model: naming_game (the paper's) or memory_rule "
                                                   "(fictitious play)", choices=("naming_game", "memory_rule")),
             Option("replicates", int, 400, "populations of the minimal model per arm (0: none)",
                    check=lambda v: None if v >= 0 else "0 or more")),
    console=CONSOLE, section=report_section, position=105, findings=findings,
    figures=(
        Figure("shares", lambda a, shares, pops, label: shares_figure(shares, pops, label),
             lambda a, shares, pops, label: f"{label}: the share of each option among every step's valid picks, per "
                                            "population (thin) and their mean (bold); triangles: where a convention "
                                            "formed."),
        Figure("bias", lambda a, bias: bias_figure(bias),
             "Per arm and source: the option's share among the agents' picks alone and among the conventions, each "
             "with its 95 % interval."),
        Figure("sizes", lambda a, bias: sizes_figure(bias),
             "Per population size N: the winner share of the option read and the mean step a convention formed, for "
             "the LLM and the minimal model, with 95 % intervals.", empty="one population size only"),
        Figure("tipping", lambda a, tip, crit, label: tipping_figure(tip, crit, label),
             lambda a, tip, crit, label: f"{label}: the share of populations a committed minority overturned at each "
                                         "fraction p, per source, with 95 % intervals; shaded: the LLM's critical "
                                         "mass interval."),
        Figure("force", lambda a, force: force_figure(force),
             "The majority force β per arm and member with its 95 % interval; 0 and 1 dashed.",
             empty="no pick was made with a memory"))))
