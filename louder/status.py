"""Status counting: how many answers of a table are valid / invalid / refused / error, and the
manifest's status block that every kind of run writes.

Pure pandas, so the analysis can count statuses without importing the model stack."""

from __future__ import annotations

import pandas as pd

from louder.types import STATUSES


def status_counts(df: pd.DataFrame) -> dict:
    counts = df["status"].value_counts().to_dict() if len(df) else {}
    return {s: int(counts.get(s, 0)) for s in STATUSES}


def _plain(v):
    """numpy scalars as Python values, so the manifest's JSON keeps numbers as numbers."""
    return v.item() if hasattr(v, "item") else v


def status_table(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per ``keys`` combination seen (sorted), with ``n_<status>`` for every status in
    STATUSES order, zeros included (int64): the count every table of louder shows beside its rates."""
    columns = [f"n_{s}" for s in STATUSES]
    if df.empty:
        return pd.DataFrame(columns=[*keys, *columns])
    t = df.groupby(keys + ["status"], observed=True).size().unstack("status", fill_value=0)
    t = t.reindex(columns=list(STATUSES), fill_value=0)
    t.columns = columns
    return t.reset_index()


def status_by(df: pd.DataFrame, keys: list[str]) -> list[dict]:
    """One record per ``keys`` combination with the count of every status (zeros included)."""
    if df.empty:
        return []
    rows = []
    for r in status_table(df, keys).itertuples(index=False):
        rows.append({**{k: _plain(v) for k, v in zip(keys, r)},
                     **{s: int(n) for s, n in zip(STATUSES, r[len(keys):])}})
    return rows


def status_block(tables: dict[str, pd.DataFrame], by: list[str], main: str = "decisions",
                 by_name: str = "status_by_attribute", mass: str | None = None) -> dict:
    """The manifest fields every run writes about its answers: ``rows`` and ``status_counts`` of
    each table (that holds answers), ``low_mass_rows`` (score mode: rows of ``mass``, default ``main``,
    whose offered choices got under 0.99 of the probability) and ``main``'s status counts per ``by``
    combination (``by_name``)."""
    d, m = tables[main], tables[mass or main]
    out = dict(rows={k: len(v) for k, v in tables.items()},
               status_counts={k: status_counts(v) for k, v in tables.items() if "status" in v.columns})
    if "choice_mass" in m.columns:
        out["low_mass_rows"] = int((m["choice_mass"] < 0.99).sum())
    out[by_name] = status_by(d, [k for k in by if k in d.columns])
    if thinking := thinking_counts(tables):
        out["thinking"] = thinking
    return out


def thinking_counts(tables: dict[str, pd.DataFrame]) -> dict:
    """Issue 30, per table that has any: rows that came with thinking, rows whose thinking never closed
    (``invalid``, reason thinking_truncated) and the reasoning tokens the server reported."""
    out = {}
    for name, df in tables.items():
        if "thinking" not in df.columns:
            continue
        with_thinking = int((df["thinking"].fillna("").astype(str).str.strip() != "").sum())
        cut = int(df["raw_response"].fillna("").astype(str).str.contains("[thinking_truncated", regex=False).sum()) \
            if "raw_response" in df.columns else 0
        tokens = df["reasoning_tokens"].dropna() if "reasoning_tokens" in df.columns else []
        if with_thinking or cut or len(tokens):
            out[name] = {"with_thinking": with_thinking, "thinking_truncated": cut,
                         "reasoning_tokens": int(sum(tokens)) if len(tokens) else None}
    return out


# --- a run that cannot show what it claims says so (issue 32) -----------------------------------------

# What each kind's answers are, and the table its raw text is in.
ANSWERS = {"simulation": ("decisions", "decisions.parquet"), "population": ("decisions", "decisions.parquet"),
           "network": ("decisions", "decisions.parquet"), "archetype": ("decisions", "decisions.parquet"),
           "explicit": ("explicit-probe answers", "probes.parquet"), "beliefs": ("beliefs answers", "beliefs.parquet"),
           "association": ("word-association answers", "association.parquet"),
           "decision": ("decision-test answers", "decision_test.parquet")}
FREE_TEXT_KINDS = ("association",)  # kinds whose answers are free text, read by a parser of louder's


def filler_models(specs) -> list[str]:
    """The model specs among ``specs`` whose backend writes filler for free text (``free_text`` false
    in the backend registry: the fake model)."""
    from louder.llm.registry import backend_info

    out = []
    for spec in specs:
        prefix = str(spec).removeprefix("completion:").partition(":")[0]
        info = backend_info(prefix)
        if info is not None and not info.free_text:
            out.append(str(spec))
    return out


def filler_line(kind: str, models: list[str], before: bool = True) -> str:
    """One line: why ``models`` (filler writers) cannot answer ``kind``, and what to run instead
    (``before`` the run: also what will happen)."""
    what = ANSWERS.get(kind, (f"{kind} answers", ""))[0]
    will = f", so every one of its {what} will be invalid" if before else ""
    return (f"{', '.join(models)} writes a filler sentence, not the word pairs the {kind} test reads{will}; run "
            "the test on a real model (e.g. --model embedded or openai:MODEL) — the fake model checks the pipeline, "
            "not a model")


def no_valid_notes(manifests: dict[str, dict]) -> list[str]:
    """One line per kind of run × model whose answers include none that is valid: what happened and
    what to change (not "run it again", which asks the same question the same way)."""
    notes = []
    for m in manifests.values():
        kind = m.get("louder_kind", "")
        what, file = ANSWERS.get(kind, (f"{kind} answers", f"the {kind} files"))
        by = next((v for k, v in m.items() if k.startswith("status_by") and isinstance(v, list)), None)
        per_model: dict[str, dict[str, int]] = {}
        for row in by or []:
            c = per_model.setdefault(str(row.get("model", "")), dict.fromkeys(("valid", "invalid", "refused", "error"), 0))
            for s in c:
                c[s] += int(row.get(s, 0))
        if not per_model:  # no per-model block: the main table's totals
            counts = next(iter(m.get("status_counts", {}).values()), None)
            per_model = {"": counts} if counts else {}
        for model, c in per_model.items():
            total = sum(c.values())
            if not total or c["valid"]:
                continue
            worst = max(("invalid", "refused", "error"), key=lambda s: c[s])
            head = f"{kind}: none of the {total} {what}" + (f" of {model}" if model else "") + \
                f" is valid ({', '.join(f'{c[s]} {s}' for s in ('invalid', 'refused', 'error') if c[s])})"
            if worst == "invalid" and kind in FREE_TEXT_KINDS and model and filler_models([model]):
                notes.append(f"{head}: {filler_line(kind, [model], before=False)}")
            elif worst == "invalid":
                notes.append(f"{head}: the answers are not in the format louder reads — `raw_response` in {file} "
                             "shows what the model wrote; an answer cut at max_tokens needs a larger max_tokens, a "
                             "model too small for the format a larger model (docs/how-to/statuses.md)")
            elif worst == "refused":
                notes.append(f"{head}: the model declined the questions — `raw_response` in {file} has its words; "
                             "another model, or the same questions worded otherwise (docs/how-to/statuses.md)")
            else:
                notes.append(f"{head}: every call failed — `raw_response` in {file} starts with the cause; fix it, "
                             "then run the same command with --retry-errors (docs/how-to/statuses.md)")
    return notes
