"""``louder report RUN_DIR``: one self-contained HTML page (figures embedded as PNG data URIs)."""

from __future__ import annotations

import html
import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from louder.analysis import figures
from louder.analysis.anchored_report import anchored_section
from louder.analysis.html import note as _p, png as _png, section as _section, table as _table
from louder.analysis.reasoning_report import reasoning_section
from louder.analysis.robustness_report import robustness_section
from louder.analysis.run import Analysis
from louder.analysis.sequential_report import sequential_section
from louder.analysis.voices_report import voices_section
from louder.io import write_text
from louder.status import status_by

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
h1{margin-bottom:0}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:12px;margin:.6em 0}td,th{border:1px solid #ddd;padding:3px 6px;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.note{color:#555;font-size:13px}
.missing{background:#fff6e0;border-left:4px solid #f0ad4e;padding:.5em 1em}.warn{color:#b35c00}
img{max-width:100%;border:1px solid #eee}pre{background:#f8f8f8;padding:1em;overflow:auto;font-size:11px}
.sig{font-weight:bold;color:#c0392b}.scroll{max-height:480px;overflow:auto}
"""


def _accounting(a: Analysis) -> str:
    parts = [_p("Every model answer has one status: <b>valid</b> (one of the offered choices), <b>invalid</b> "
                "(off-list or unparseable; raw text kept in the Parquet files), <b>refused</b> (the model declined) "
                "or <b>error</b> (the call failed after retries). Rates and DPDs use valid answers only.")]
    if a.decisions is not None:
        # every wording (issue 25) and every reasoning level (issue 30)
        d = next(x for x in (getattr(a, "levels", None), getattr(a, "presented", None), a.decisions) if x is not None)
        keys = ["model", "condition", "scenario", "group", "attribute"]
        keys += [c for c in ("signal", "wording", "reasoning") if c in d and d[c].nunique() > 1]
        t = pd.DataFrame(status_by(d, keys))
        parts += ["<h3>Decisions (per attribute)</h3>", _table(t, scroll=True)]
    if a.personas is not None and len(a.personas):
        t = pd.DataFrame(status_by(a.personas, ["model", "condition", "scenario", "group", "attribute"]))
        bad = t[(t["invalid"] + t["refused"] + t["error"]) > 0]
        parts += ["<h3>Personas</h3>", _p("A decision row whose persona failed carries the persona's status. "
                                           f"{len(bad)} of {len(t)} case × attribute cells had a persona that was "
                                           "not valid" + (":" if len(bad) else ".")), _table(bad, scroll=True)]
    if a.probes is not None:
        t = pd.DataFrame(status_by(a.probes, ["model", "scenario", "group"]))
        parts += ["<h3>Explicit probes (per case)</h3>", _table(t, scroll=True)]
    if a.beliefs is not None:
        t = pd.DataFrame(status_by(a.beliefs, ["model", "scenario", "group", "attribute"]))
        parts += ["<h3>Beliefs probe (per attribute)</h3>", _table(t, scroll=True)]
    for title, df, keys in (("Word association test", a.association, ["model", "stereotype", "variation"]),
                            ("Relative decision test", a.decision_test, ["model", "stereotype", "variant"])):
        if df is not None:
            parts += [f"<h3>{title}</h3>", _table(pd.DataFrame(status_by(df, keys)), scroll=True)]
    parts.append(_thinking_accounting(a))
    return _section("Answer accounting", *parts)


def _thinking_accounting(a: Analysis) -> str:
    """Issue 30: per table, the answers that came with thinking, those whose thinking never closed
    (invalid, reason thinking_truncated) and the reasoning tokens reported; "" without any thinking."""
    rows = []
    for name, df in (("decisions", getattr(a, "levels", None) if getattr(a, "levels", None) is not None
                      else a.decisions), ("personas", a.personas), ("probes", a.probes), ("beliefs", a.beliefs)):
        if df is None or "thinking" not in df:
            continue
        thinking = df["thinking"].fillna("").astype(str).str.strip() != ""
        cut = df["raw_response"].fillna("").astype(str).str.contains("[thinking_truncated", regex=False)
        tokens = df["reasoning_tokens"].dropna() if "reasoning_tokens" in df else pd.Series(dtype=float)
        if thinking.any() or cut.any() or len(tokens):
            rows.append(dict(table=name, rows=len(df), with_thinking=int(thinking.sum()),
                             thinking_truncated=int(cut.sum()), reasoning_tokens=int(tokens.sum()) if len(tokens)
                             else None))
    if not rows:
        return ""
    return ("<h3>Thinking (reasoning models)</h3>" + _p(
        "The thinking of a reasoning model is kept apart from its answer (the <code>thinking</code> column) and "
        "never parsed for a decision. <b>thinking_truncated</b>: answers whose thinking never closed before "
        "max_tokens; they have no answer and are counted invalid (raise max_tokens for reasoning models). "
        "<b>reasoning_tokens</b>: the thinking tokens the server reported (part of the output tokens).")
            + _table(pd.DataFrame(rows)))


def _rationales(a: Analysis) -> str:
    r = a.tables["rationales"]
    if r.empty:
        return _section("Rationales", _p("No valid decisions with rationales in this run."))
    pats = r[r["analysis"] == "pattern"]
    words = r[r["analysis"] == "distinctive_word"]
    thinking = r[r["analysis"] == "thinking"]
    parts = [_p("Phrase patterns the paper counted (sections 5.2, 5.5): rationales of valid decisions that match, "
                "out of all rationales of valid decisions of that attribute.")]
    if len(pats):
        p = pats.assign(matches=pats["n_match"].astype(int).astype(str) + "/" + pats["n_rationales"].astype(int)
                        .astype(str))
        wide = p.pivot_table(index=["model", "condition", "scenario", "group", "attribute"], columns="pattern",
                             values="matches", aggfunc="first").reset_index()
        wide.columns.name = None
        parts.append(_table(wide.fillna("–"), scroll=True))
    if len(words):
        parts.append(_p("Most distinctive words per attribute: log-odds ratio with an informative Dirichlet prior "
                        "(Monroe, Colaresi &amp; Quinn 2008) against the rest of the group; z-score in brackets."))
        w = words.sort_values("z", ascending=False).groupby(["model", "condition", "scenario", "group", "attribute"])
        rows = [dict(zip(["model", "condition", "scenario", "group", "attribute"], k),
                     words=", ".join(f"{x} ({z:.1f})" for x, z in zip(g["word"], g["z"]))) for k, g in w]
        parts.append(_table(pd.DataFrame(rows), scroll=True))
    if len(thinking):  # issue 30: the thinking of a reasoning model, per attribute
        parts.append(_p("The thinking of a reasoning model, per attribute and reasoning level: how many thinkings of "
                        "valid decisions name the persona's own attribute (the attribute and its words in "
                        "louder/data/twins.yaml) and how many use its stereotype words (Bai et al.'s stimuli, "
                        "louder/data/analysis/stereotype_words.yaml), out of all that came with thinking."))
        t = thinking.assign(matches=thinking["n_match"].astype(int).astype(str) + "/"
                            + thinking["n_rationales"].astype(int).astype(str))
        wide = t.pivot_table(index=["model", "condition", "scenario", "group", "reasoning", "attribute"],
                             columns="pattern", values="matches", aggfunc="first").reset_index()
        wide.columns.name = None
        parts.append(_table(wide.fillna("–"), scroll=True))
    return _section("Rationales", *parts)


def _siblings(a: Analysis) -> str:
    """The LLM Word Association and Relative Decision Tests, when the folder holds them."""
    t, parts = a.tables, []
    if "association_stats" in t:
        s = t["association_stats"]
        parts += [
            "<h3>LLM Word Association Test</h3>",
            _p("Bias per response (Eq. 1 of Bai et al.): share of stigma-associated words given to the stigmatised "
               "group + share of default-associated words given to the default group − 1; 0 is unbiased, 1 fully "
               "stereotypical. <b>authors</b>: unparsed or refused answers score 0 and are kept (the authors' "
               "convention); <b>strict</b>: they are left out, and so are one-sided answers (every word given to one "
               "group, so one term of Eq. 1 is 0/0; the authors' epsilon scores them −0.5), counted in "
               "n_one_sided. One-sample t-tests against 0; 95 % bootstrap "
               "intervals."),
            _png(figures.sibling_figure(s, a.association, "association")),
            _table(s[s["level"] != "stereotype"], scroll=True), _table(s[s["level"] == "stereotype"], scroll=True)]
    if "decision_stats" in t:
        s = t["decision_stats"]
        parts += [
            "<h3>LLM Relative Decision Test</h3>",
            _p("Score 1 when the stigmatised person gets the stereotype-consistent option (or the default person "
               "the other one); 0.5 is unbiased. Valid answers only; refusals and unreadable answers are counted "
               "beside. For the absolute variant: the yes rate per pairing."),
            _png(figures.sibling_figure(s, a.decision_test, "decision")), _table(s, scroll=True)]
    if "association_decision_link" in t:
        parts += ["<h3>Association → decision (chained prompts)</h3>",
                  _p("Logistic regression of the decision score on the association score of the same "
                     "conversation (statsmodels Logit), with the coefficient's 95 % interval."),
                  _table(t["association_decision_link"])]
    if "weat" in t:  # issue 14: the embedding comparison beside the association scores
        w = t["weat"]
        assoc = t.get("association_stats")
        if assoc is not None:
            means = assoc[(assoc["level"] == "stereotype")].pivot_table(index="name", columns=["model", "convention"],
                                                                       values="mean")
            means.columns = [f"association {m} ({c})" for m, c in means.columns]
            w = w.merge(means, left_on="stereotype", right_index=True, how="left")
        parts += ["<h3>WEAT (embeddings) beside the association scores</h3>",
                  _p("WEAT effect size d (Caliskan et al. 2017): stigma vs default group tokens against stigma vs "
                     "default words, cosine similarity of sentence embeddings; d &gt; 0 is the stereotypical "
                     "direction, like a positive association score. p: one-sided permutation test over "
                     "partitions of the tokens (exact where few). The correlation is across stereotypes."),
                  _table(w, scroll=True), _table(t.get("weat_association_correlation"))]
    return _section("Word association and relative decision tests (Bai et al.)", *parts) if parts else ""


def _cases_table(cases: pd.DataFrame) -> pd.DataFrame:
    keep = ["kind", "model", "condition", "scenario", "group", "dpd", "threshold", "p_value", "p_holm", "significant",
            "ci_low", "ci_high", "dpd_p", "ci_low_p", "ci_high_p", "p_value_p", "mdd", "p_independence", "n_valid",
            "n_invalid", "n_refused", "n_error"]
    out = cases[keep].copy()
    # issue 14: say in the table which cases could not have seen a large DPD
    out.insert(out.columns.get_loc("mdd") + 1, "power",
               ["" if k == "explicit" else "underpowered" if u else "ok"
                for k, u in zip(cases["kind"], cases["underpowered"])])
    return out


def _rates_table(attributes: pd.DataFrame) -> pd.DataFrame:
    return attributes[["kind", "model", "condition", "scenario", "group", "attribute", "rate", "n_target",
                       "n_valid", "n_invalid", "n_refused", "n_error"]]


def _choices(choices: pd.DataFrame | None) -> str:
    """Rate of every choice per attribute (issue 14): DPD only compares the target's rate."""
    if choices is None or choices.empty:
        return ""
    wide = choices.pivot_table(index=["model", "condition", "scenario", "group", "attribute", "n_valid"],
                               columns="choice", values="rate", fill_value=0.0).reset_index()
    wide.columns.name = None
    return _section("Rate of every choice per attribute",
                    _p("Share of each choice among an attribute's valid decisions. The cases table gives "
                       "p_independence: a test that choice is independent of attribute over all choices "
                       "(Pearson χ² when every expected count is at least 5, else a Monte-Carlo permutation "
                       "test), beside the target-only DPD."), _table(wide, scroll=True))


def _archetype(a: Analysis) -> str:
    """Archetype runs: why every interval resamples archetype × replicate clusters (analysis.archetype)."""
    from louder.analysis.archetype import archetype_note

    note = archetype_note(a.decisions)
    if note is None:
        return ""
    return _section("Archetype mode: clusters, not agents", _p(html.escape(note.text)))


def _network(a: Analysis) -> str:
    """Networks and influence (a network run): louder/analysis/network_report.py."""
    from louder.analysis.network_report import network_section

    return network_section(a)
# --- population runs, policy variants and counterfactual twins (issue 11) ---
JOINT_LABEL_TITLE = "Intersections as one group: the joint label per case"
JOINT_LABEL_NOTE = ("In a population run the per-case tables below treat every combination of the population's "
                    "groups (e.g. Female | Liberal) as one attribute of one group named after the population. Their "
                    "DPD is the gap between the two most extreme of many small cells: large by construction and "
                    "underpowered. The answer to \"does the model treat a group's attributes differently?\" is the "
                    "per-group DPD and the regression in <b>Population</b> above.")
MAX_HEATMAPS = 12  # intersection heat maps drawn (the table has every cell of every case)


def _population_sections(a: Analysis) -> list[str]:
    """"Population", "Intersections", "Policy variants" and "Counterfactual twins", for what the run holds."""
    return [_population(a), _intersections(a), _variants(a), _twins(a)]


def _population(a: Analysis) -> str:
    from louder.populations.fit import fit_errors

    t = a.tables
    if "population_groups" not in t:
        return ""
    m = (a.manifests.get("simulation") or {}).get("population") or {}
    parts = []
    if m:
        parts.append(_p(f"Population <b>{html.escape(str(m.get('id')))}</b> ({html.escape(str(m.get('path')))}): "
                        f"{m.get('n')} agents drawn in {m.get('cells_drawn')} cells of "
                        f"{html.escape(' × '.join(m.get('groups', [])))}. Fit: {fit_errors(m)}, Pearson chi-square "
                        f"{m.get('chi2', float('nan')):.2f} on {m.get('df')} df against the fitted joint "
                        f"(p = {m.get('p_value', float('nan')):.3f})."))
    parts += [
        _p("<b>Overall</b>: the population's target rate, weighted by each agent's post-stratification weight, "
           "with a Wilson interval at the Kish effective size; every answer status counted beside it."),
        _table(t["population_overall"], scroll=True),
        _p("<b>Per group</b>: DPD across the group's attributes, each rate population-weighted over the other "
           "groups (the gap as it exists in this population, composition included), against the parity "
           "bootstrap threshold; significant when its p-value, Holm-adjusted across the table's rows (p_holm), is "
           "below 0.05; interval by binomial bootstrap at the effective sizes (contains the DPD, valid at "
           "0: docs/statistics.md). Small cells make wide intervals: a "
           "non-significant DPD at this N is not evidence of no bias."),
        _table(t["population_groups"], scroll=True), _table(t["population_rates"], scroll=True)]
    reg = t["population_regression"]
    ok = reg[reg["status"] == "ok"]
    parts.append(_p("<b>Logistic regression</b> of the target decision on every group's attributes (statsmodels, "
                    "treatment coding against each group's most frequent attribute): the odds ratio of an "
                    "attribute holding the other groups fixed, with its 95 % Wald interval. Agents with an "
                    "attribute the model cannot estimate (fewer than 10 valid decisions, or all the same decision) "
                    "are left out first and named in <b>dropped</b>; a case whose data still cannot support the "
                    "model says why (too few data: fewer than 10 valid decisions per parameter; no variation; "
                    "separation)."))
    for key, g in ok.groupby(["model", "condition", "scenario", "variant"], sort=True):
        parts.append(_png(figures.odds_ratio_figure(g, title=f"{' · '.join(key)}\nodds ratios (95 % interval)")))
    parts.append(_table(reg, scroll=True))
    return _section("Population", *parts)


def _intersections(a: Analysis) -> str:
    t = a.tables.get("population_intersections")
    if t is None or t.empty:
        return ""
    parts = [_p("Target rate and n per intersection of two groups. Cells with at least 30 valid decisions are "
                "tested against the rest of the population (Fisher's exact test) with Benjamini–Hochberg across "
                "the pair's tested cells (✱); smaller cells are shown hatched and not tested. The per-case p-values "
                "of the DPD table are Holm-adjusted across cases instead.")]
    drawn = 0
    for key, g in t.groupby(["model", "condition", "scenario", "variant", "group_a", "group_b"], sort=True):
        if drawn >= MAX_HEATMAPS:
            parts.append(_p("(further heat maps left out; every cell is in the table and "
                            "population_intersections.csv)"))
            break
        fig = figures.intersection_heatmap(g.rename(columns={"attribute_a": key[4], "attribute_b": key[5]}),
                                           key[4], key[5], title=f"{' · '.join(key[:4])}\ntarget rate per "
                                           f"{key[4]} × {key[5]}\n(hatched: n < 30, untested; ✱ BH-significant)")
        parts.append(_png(fig))
        drawn += 1
    parts.append(_table(t, scroll=True))
    return _section("Intersections", *parts)


def _variants(a: Analysis) -> str:
    t = a.tables
    if "variant_rates" not in t:
        return ""
    return _section(
        "Policy variants",
        _p("Each variant rewords the scenario (its file's <code>variants:</code>); agents keep their persona across "
           "variants, so differences come from the wording. Rate per variant, overall ((all)) and per attribute "
           "(population runs: weighted), with every answer status."),
        _table(t["variant_rates"], scroll=True),
        _p("Effect of each variant against base per attribute: rate(variant) − rate(base) over valid decisions "
           "(unweighted), 95 % bootstrap interval."),
        _table(t["variant_effects"], scroll=True),
        _p("Does the variant widen the disparity? DPD(variant) − DPD(base) with a 95 % bootstrap interval: "
           "<b>widens</b> / <b>narrows</b> when the interval excludes 0, else inconclusive."),
        _table(t["variant_dpd"], scroll=True))


def _twins(a: Analysis) -> str:
    t = a.tables
    if "twin_dpd" not in t:
        return ""
    return _section(
        "Counterfactual twins",
        _p("Each persona was written once and re-expressed for every other attribute of each group, changing only "
           "the attribute's words, pronouns (with the grammar they govern) and (for gender and race/ethnicity) the "
           "name (<code>louder/data/twins.yaml</code>); a group without a word list is rewritten by a model. A "
           "check verifies that the old attribute's words are gone, the new ones present, a new name is a "
           "plausible name, and nothing else changed (exactly, or for a model rewrite to a difflib similarity of "
           "0.9). twin_status: <b>ok</b> passed the check; <b>unchanged</b> the persona never names the attribute "
           "(same text); <b>failed_check</b> failed it (twin_reason in twins.parquet says why); <b>no_persona</b> "
           "the original persona was not valid; <b>invalid / refused / error</b> the twin's name or rewrite call "
           "failed. Every twin that has a text decides; the analysis uses twin sets whose every member passed "
           "and decided validly."),
        _table(t["twin_accounting"], scroll=True),
        _p("<b>Paired vs unpaired DPD</b>: the paired DPD compares the attributes on the same personas (only the "
           "attribute changed), the unpaired one the drawn agents (each with its own persona). "
           "paired_to_unpaired near 1: the attribute alone explains the gap; near 0: the gap came from what the "
           "model wrote into the personas."),
        _table(t["twin_dpd"], scroll=True),
        _p("Per attribute pair: flip rate = discordant twin pairs / complete sets; exact McNemar test (two-sided "
           "binomial test of a_only among the discordant pairs at ½)."),
        _table(t["twin_flips"], scroll=True))


def environment_table(manifests: dict[str, dict]) -> pd.DataFrame:
    """One row per package (Python first), one column per manifest that recorded versions: what each
    part of the run ran on. Two parts of one run may differ (the probes run later, elsewhere)."""
    versions = {k: m["package_versions"] for k, m in manifests.items() if m.get("package_versions")}
    names = list(dict.fromkeys(n for v in versions.values() for n in v))
    return pd.DataFrame([{"package": n, **{k: v.get(n) or "not installed" for k, v in versions.items()}}
                         for n in names])


def _environment(a: Analysis) -> str:
    env = environment_table(a.manifests)
    if env.empty:
        return ""
    differ = ", ".join(env["package"][env.drop(columns="package").nunique(axis=1).gt(1)])
    return _section("Environment",
                    _p("The Python and package versions each part of the run recorded in its manifest (the "
                       "packages whose versions can move a result)." +
                       (f" <b>Parts of this run ran on different versions</b>: {html.escape(differ)}." if differ
                        else "")),
                    _table(env))


def render(a: Analysis) -> str:
    t = a.tables
    sim = a.manifests.get("simulation", {})
    title = f"louder report — {html.escape(str(sim.get('run_id') or a.run_dir.name))}"
    models = sorted(set(t["cases"]["model"])) if len(t["cases"]) else []
    head = [f"<h1>{title}</h1>",
            _p(f"Generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from <code>{html.escape(str(a.run_dir))}"
               f"</code>. Models: {html.escape(', '.join(models) or '–')}.")]
    if any("embedded" in m for m in models):
        head.append(_p('<span class="warn">The embedded SmolLM2-135M model shows that the pipeline runs for real; '
                       "its answers are not evidence about bias in capable models.</span>"))
    if a.missing:
        head.append('<div class="missing"><b>Not in this run folder:</b><ul>' +
                    "".join(f"<li>{html.escape(m)}</li>" for m in a.missing) + "</ul></div>")

    population = "population_groups" in t
    per_case = [
        _section(JOINT_LABEL_TITLE if population else "Demographic parity difference per case (cf. Fig. 3)",
                 _p(JOINT_LABEL_NOTE) if population else "",
                 _p("DPD = largest − smallest target-decision rate across a group's attributes (implicit) or "
                    "largest − smallest share of answers naming an attribute (explicit, Unknown in the "
                    "denominator only). The black tick is the paper's parity threshold, the 95th percentile of "
                    "DPD under parity (binomial bootstrap). p is the bootstrap p-value, p_holm its Holm "
                    "adjustment over all cases of the run, and a case is <b>significant</b> (✱) when p_holm &lt; "
                    "0.05 — the run's multiplicity control, so a DPD just above its tick need not be; the "
                    "interval resamples "
                    "decisions within each attribute and projects a simultaneous band of every pairwise rate "
                    "difference onto the DPD, so it always contains the DPD and stays valid when the true DPD "
                    "is 0 (docs/statistics.md). In score mode, <b>dpd_p</b> is the DPD of the mean "
                    "p_target per attribute (the expected rates), with a bootstrap interval over agents and a "
                    "permutation p-value (p_value_p). <b>mdd</b> is the smallest DPD the test detects with 80 % "
                    "power at the case's n (simulated, evenly spread around its pooled rate); cases with mdd "
                    "above 0.3 (or none up to 1) are marked <b>underpowered</b>: a small DPD or a large p there is "
                    "not evidence of no bias."),
                 _png(figures.dpd_figure(t["cases"])), _table(_cases_table(t["cases"]), scroll=True)),
        _section("Implicit vs explicit (section 5.1)",
                 _p("Per model: mean DPD over implicit (contextualized) and explicit cases, and Welch's t-test. "
                    "With beliefs (<code>louder probe beliefs</code>): the mean belief DPD and Welch's t-test of "
                    "implicit vs belief (t_belief, p_value_belief) — does the model act more biased than it believes "
                    "people are? Implicit and belief DPDs are both differences of rates of choosing the target; "
                    "the explicit DPD is a difference of shares of answers (next section)."),
                 _table(t["contrast"]),
                 *([_p("Per case: each implicit case beside the explicit probe of its scenario × group, and the "
                       "difference implicit − explicit with an interval that contains it (conservative: it holds "
                       "both cases' intervals at once). A case with one side only says in <i>note</i> what adds "
                       "the other."),
                    _table(t["contrast_cases"], scroll=True)] if len(t.get("contrast_cases", ())) else [])),
        voices_section(t),
        anchored_section(t),  # issue 34
        _section("Target-decision rate per attribute (cf. Fig. 4)",
                 _png(figures.rates_figure(t["attributes"])), _table(_rates_table(t["attributes"]), scroll=True)),
        _choices(t.get("choices")),
        _section("Persona-condition ablation (cf. Fig. 5)",
                 _p("DPD per case under each persona condition; diff_vs_contextualized = DPD(contextualized) − "
                    "DPD(condition) with a 95 % bootstrap interval."),
                 _png(figures.ablation_figure(t["ablation"])), _table(t["ablation"], scroll=True)),
        _section("Literature directions (Table 3)",
                 _p("aligned: the predicted direction with a 95 % interval excluding 0; opposite: the reverse "
                    "direction, interval excluding 0; inconclusive: the interval includes 0."),
                 _png(figures.directions_figure(t["directions"])),
                 _table(t["directions"].drop(columns=["evidence"]), scroll=True))]
    pop = _population_sections(a)
    # issue 23: a population run leads with its answer (per-group DPDs and the regression, then the
    # intersections); its per-case table, the joint label, follows the intersections it summarises
    lead = [*pop[:2], *per_case, _network(a), *pop[2:]] if population else [*per_case, _network(a), *pop]
    sections = [
        _archetype(a),
        sequential_section(a),  # issue 20: a sequential run's verdicts first; they replace the bootstrap's
        *lead,
        robustness_section(t, getattr(a, "presented", None)),  # issue 25
        reasoning_section(t),  # issue 30
        _rationales(a),
        _siblings(a),
        _accounting(a),
        _environment(a),
        _section("Manifests", *[f"<h3>{html.escape(k)}</h3><pre>{html.escape(json.dumps(m, indent=2, default=str))}"
                                f"</pre>" for k, m in a.manifests.items()] or [_p("No manifest found.")]),
    ]
    return ("<!doctype html><html><head><meta charset='utf-8'><title>" + title + "</title><style>" + CSS +
            "</style></head><body>" + "\n".join(head + sections) + "</body></html>")


def write_report(a: Analysis) -> Path:
    path = a.run_dir / "report" / "index.html"
    write_text(render(a), path)
    return path
