"""Scenarios and sociodemographic groups: pydantic models over the YAML data files.

Built-in files live in ``louder/data/scenarios`` and ``louder/data/groups``; a user adds one by
writing a file of the same format and naming its path where an id would go (see README).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from louder.datafiles import load_cached
from louder.errors import LouderError, did_you_mean

DATA = resources.files("louder") / "data"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Choice(_Strict):
    label: str = Field(min_length=1)
    description: str = ""


class CompletionText(_Strict):
    """Pieces of the completion-model (GPT-3 style) prompts of Appendix C."""

    question: str
    extraction_task: str


class ExplicitText(_Strict):
    """Third-person version of the scenario for the explicit question (Appendix D)."""

    situation: str
    decision_sentence: str
    extra_as_printed: str | None = None


class BeliefText(_Strict):
    """The beliefs probe's wording (docs/voices.md): ``target`` completes "how many would choose to …"
    ("evacuate"); ``situation`` is the third-person text the question follows (default: the explicit
    probe's ``explicit.situation``)."""

    target: str = Field(min_length=1)
    situation: str | None = Field(None, min_length=1)


class Replacement(_Strict):
    """Replace every occurrence of ``find`` (exact text) by ``with`` in the situation and the choice
    descriptions."""

    find: str = Field(min_length=1)
    with_: str = Field(alias="with")


class Variant(_Strict):
    """A policy variant of a scenario (a what-if): alternative situation / choice wording, then text
    replacements. The choice labels, the target and the persona context stay those of the scenario,
    so every variant's decisions compare with the base's and an agent's persona is the same under
    every variant."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    id: str = Field(pattern=r"^[a-z0-9_]+$")
    name: str = ""
    situation: str | None = Field(None, min_length=1)
    choices: dict[str, str] = {}  # choice label → alternative description
    replace: list[Replacement] = []

    @model_validator(mode="after")
    def _changes_something(self) -> Variant:
        what = "wording" if type(self).__name__ == "Wording" else "variant"
        if self.id == BASE:
            raise ValueError(f"{what} id {BASE!r} is reserved for the scenario as written; choose another id")
        if self.situation is None and not self.choices and not self.replace:
            raise ValueError(f"{what} {self.id!r} changes nothing; give `situation`, `choices` or `replace`")
        return self


BASE = "base"  # the scenario as written: no variant
AS_WRITTEN = "as_written"  # the scenario's own text: no wording


class Wording(Variant):
    """A paraphrase of a scenario (``wordings:``): the same shape as a variant, but nuisance variation
    — the same situation said differently — which the analysis pools instead of comparing (docs/robustness.md).
    Labels, target and persona context are the scenario's; ``source`` says who wrote it (louder's
    hand-written wordings are marked so; the paper's text is the scenario's own)."""

    source: str = ""

    @model_validator(mode="after")
    def _not_as_written(self) -> Wording:
        if self.id == AS_WRITTEN:
            raise ValueError(f"wording id {AS_WRITTEN!r} is reserved for the scenario's own text; choose another id")
        return self


class Scenario(_Strict):
    id: str = Field(pattern=r"^[a-z0-9_]+$")
    name: str
    source: str = ""
    situation: str = Field(min_length=1)
    choices: list[Choice] = Field(min_length=2)
    target: str
    persona_context: str = Field(min_length=1)
    persona_context_as_printed: str | None = None
    completion: CompletionText | None = None
    explicit: ExplicitText | None = None
    belief: BeliefText | None = None
    notes: list[str] = []
    variants: list[Variant] = []
    wordings: list[Wording] = []  # paraphrases: nuisance variation, pooled by the analysis (docs/robustness.md)
    # An example shipped beside the paper's scenarios: loadable by id, but not in the default set a run uses.
    example: bool = False

    @model_validator(mode="after")
    def _target_is_a_choice(self) -> Scenario:
        labels = self.labels
        if len(set(x.lower() for x in labels)) != len(labels):
            raise ValueError(f"choices must have distinct labels, got {labels}")
        if self.target not in labels:
            raise ValueError(f"target {self.target!r} must be one of the choice labels {labels}")
        ids = [v.id for v in self.variants]
        if len(set(ids)) != len(ids):
            raise ValueError(f"variants: ids must be distinct, got {ids}")
        for v in self.variants:
            _apply(self, v)  # every replacement must find its text: a typo would silently change nothing
        ids = [w.id for w in self.wordings]
        if len(set(ids)) != len(ids):
            raise ValueError(f"wordings: ids must be distinct, got {ids}")
        for w in self.wordings:
            _apply(self, w)
        return self

    @property
    def wording_ids(self) -> list[str]:
        return [AS_WRITTEN] + [w.id for w in self.wordings]

    def wording(self, wording_id: str) -> Scenario:
        """The scenario in wording ``wording_id`` (``as_written``: itself). Same id, labels, target and
        persona context; its variants are kept, so a policy variant can be applied on top (``text``)."""
        if wording_id == AS_WRITTEN:
            return self
        for w in self.wordings:
            if w.id == wording_id:
                return _apply(self, w).model_copy(update={"variants": self.variants})
        raise LouderError(f"scenario {self.id}: no wording {wording_id!r}{did_you_mean(wording_id, self.wording_ids)}; "
                          "its wordings are "
                          f"{', '.join(self.wording_ids)} (add it under `wordings:` in the scenario file, or write "
                          f"some with `louder scenario paraphrase`)")

    def text(self, variant_id: str = BASE, wording_id: str = AS_WRITTEN) -> Scenario:
        """The scenario under policy variant ``variant_id`` said in wording ``wording_id``: the wording
        first, then the variant's changes on top of it (``base``/``as_written``: unchanged)."""
        if wording_id == AS_WRITTEN:
            return self.variant(variant_id)
        worded = self.wording(wording_id)
        if variant_id == BASE:
            return worded.model_copy(update={"variants": []})
        v = next((x for x in self.variants if x.id == variant_id), None)
        if v is None:
            return self.variant(variant_id)  # raises the unknown-variant error
        if v.situation is not None and any(w.id == wording_id and w.situation is not None for w in self.wordings):
            raise LouderError(f"scenario {self.id}: variant {variant_id!r} rewrites the whole situation, so wording "
                              f"{wording_id!r} cannot be said under it; give the variant as `replace:` edits, or run "
                              "the wordings without it")
        try:
            return _apply(worded, v)
        except ValueError as e:
            raise LouderError(f"scenario {self.id}: variant {variant_id!r} under wording {wording_id!r}: {e} "
                              "(the wording changed the text the variant edits; let the wording keep it, or run "
                              "them separately)") from None

    @property
    def variant_ids(self) -> list[str]:
        return [BASE] + [v.id for v in self.variants]

    def variant(self, variant_id: str) -> Scenario:
        """The scenario under ``variant_id`` (``base``: itself, unchanged). Same id, labels and target."""
        if variant_id == BASE:
            return self
        for v in self.variants:
            if v.id == variant_id:
                return _apply(self, v)
        raise LouderError(f"scenario {self.id}: no variant {variant_id!r}{did_you_mean(variant_id, self.variant_ids)}; "
                          "its variants are "
                          f"{', '.join(self.variant_ids)} (add it under `variants:` in the scenario file)")

    @property
    def labels(self) -> list[str]:
        return [c.label for c in self.choices]

    def context(self, paper_faithful: bool) -> str:
        """The B.2 context statement; the printed (swapped) one when ``paper_faithful``."""
        if paper_faithful and self.persona_context_as_printed:
            return self.persona_context_as_printed
        return self.persona_context

    def prompt_text(self, neighbours: str | None = None) -> str:
        """Appendix A text: the situation, then 'Please decide:' and one line per choice. A network
        run's ``neighbours`` sentence (what the agent's neighbours chose) follows the situation."""
        lines = [self.situation] + ([neighbours] if neighbours else []) + ["Please decide:"]
        lines += [f"{c.label}: {c.description}" if c.description else c.label for c in self.choices]
        return "\n".join(lines)


def _apply(scenario: Scenario, v: Variant) -> Scenario:
    """``v``'s wording, then its replacements, on the situation and choice descriptions."""
    what = "wording" if isinstance(v, Wording) else "variant"
    unknown = sorted(set(v.choices) - set(scenario.labels))
    if unknown:
        raise ValueError(f"{what} {v.id!r}: choices {unknown} are not labels of the scenario {scenario.labels}; "
                         f"{what}s may reword a choice's description, not add or rename choices")
    situation = v.situation if v.situation is not None else scenario.situation
    descriptions = [v.choices.get(c.label, c.description) for c in scenario.choices]
    for r in v.replace:
        if r.find not in situation and not any(r.find in d for d in descriptions):
            raise ValueError(f"{what} {v.id!r}: replace.find {r.find[:60]!r} does not occur in the situation or "
                             f"the choice descriptions; copy the text exactly")
        situation = situation.replace(r.find, r.with_)
        descriptions = [d.replace(r.find, r.with_) for d in descriptions]
    choices = [Choice(label=c.label, description=d) for c, d in zip(scenario.choices, descriptions)]
    return scenario.model_copy(update={"situation": situation, "choices": choices, "variants": [], "wordings": []})


class ExplicitOption(_Strict):
    label: str
    attribute: str


class UnknownOption(_Strict):
    label: str = "Unknown"
    description: str = "Unknown (meaning unable to decide/equally possible)"


class ExplicitQuestion(_Strict):
    question: str
    options: list[ExplicitOption]
    unknown: UnknownOption = UnknownOption()
    completion_question: str | None = None
    completion_answer: str | None = None
    extraction_task: str | None = None


class Group(_Strict):
    id: str = Field(pattern=r"^[a-z0-9_]+$")
    name: str
    source: str = ""
    attributes: list[str] = Field(min_length=2)
    explicit: ExplicitQuestion | None = None
    # An example shipped beside the paper's groups (e.g. for the names signal): loadable by id, not in a
    # run's default set.
    example: bool = False

    @model_validator(mode="after")
    def _options_cover_attributes(self) -> Group:
        if len(set(self.attributes)) != len(self.attributes):
            raise ValueError("attributes must be distinct")
        if self.explicit:
            mapped = sorted(o.attribute for o in self.explicit.options)
            if mapped != sorted(self.attributes):
                raise ValueError(
                    f"explicit.options must map one option to each attribute {self.attributes}, got {mapped}"
                )
        return self


def _builtin_ids(kind: str) -> list[str]:
    return sorted(p.name[:-5] for p in (DATA / kind).iterdir() if p.name.endswith(".yaml"))


def builtin_scenarios() -> list[str]:
    """The default scenarios of a run: the built-in files except examples (``example: true``)."""
    return [s for s in _builtin_ids("scenarios") if not load_scenario(s).example]


def builtin_groups() -> list[str]:
    """The default groups of a run: the built-in files except examples (``example: true``)."""
    return [g for g in _builtin_ids("groups") if not load_group(g).example]


def _is_path(ref: str) -> bool:
    return ref.endswith((".yaml", ".yml")) or "/" in ref


def _load(kind: str, ref: str, cls: type[BaseModel], among: Iterable[str] = ()):
    what = kind[:-1]
    if _is_path(ref):
        path: Any = Path(ref)
    elif own := [r for r in among if _is_path(r) and _load(kind, r, cls).id == ref]:
        return _load(kind, own[0], cls)  # the id of a file the run names by path (ids key the cases)
    elif ref in _builtin_ids(kind):
        path = DATA / kind / f"{ref}.yaml"
    else:
        raise LouderError(f"unknown {what} {ref!r}{did_you_mean(ref, _builtin_ids(kind))}; built-in {kind}: "
                          f"{', '.join(_builtin_ids(kind))} (or give the path of a .yaml file)")
    return load_cached(cls, path, what)


def load_scenario(ref: str, among: Iterable[str] = ()) -> Scenario:
    """A built-in scenario by id, or a scenario file by path. ``among``: the scenario refs of a run
    (``config.scenarios``), so that the id of a file it names by path finds that file — a run keys
    its cases by id, whether the scenario was named by id or by path."""
    return _load("scenarios", ref, Scenario, among)


def load_group(ref: str, among: Iterable[str] = ()) -> Group:
    """A built-in group by id, or a group file by path; ``among``: as for ``load_scenario``."""
    return _load("groups", ref, Group, among)


def scenario_ids(refs: Iterable[str]) -> list[str]:
    """The ids of the scenarios ``refs`` name (by id or by path), in order: what keys a run's cases."""
    return [load_scenario(r).id for r in refs]


def group_ids(refs: Iterable[str]) -> list[str]:
    """The ids of the groups ``refs`` name (by id or by path), in order."""
    return [load_group(r).id for r in refs]


def check_distinct(kind: str, refs: list[str]) -> None:
    """One id per scenario (``kind`` "scenarios") or group ("groups") of a run: the same one named
    twice, or two different files with the same id, is a LouderError naming both (the caller names
    the field)."""
    cls = Scenario if kind == "scenarios" else Group
    seen: dict[str, str] = {}
    for ref in refs:
        sid = _load(kind, ref, cls).id
        if sid in seen:
            first = seen[sid]
            if first == ref or _where(kind, first) == _where(kind, ref):
                raise LouderError(f"listed more than once: {first!r} and {ref!r} are the same {kind[:-1]} "
                                  f"{sid!r}; list it once")
            raise LouderError(f"{first!r} and {ref!r} are two files with the same id {sid!r}; a run keys its "
                              f"{kind} by id, so give one of them another `id:`")
        seen[sid] = ref


def _where(kind: str, ref: str) -> str:
    """The file ``ref`` names, resolved (a built-in by its place in the package)."""
    return str(Path(ref).resolve()) if _is_path(ref) else str(DATA / kind / f"{ref}.yaml")

