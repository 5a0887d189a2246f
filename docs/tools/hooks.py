"""MkDocs hooks of the louder site: reference pages generated from the code at build time.

A page holds a marker such as ``<!-- louder:cli -->``; ``on_page_markdown`` replaces it with
Markdown generated from the code, so the reference cannot drift from it:

- ``louder:cli``: every command and option, from the typer app's own parameters and help texts;
- ``louder:config``: every config field with its type, default, range and description, from the
  pydantic models (``louder.config.ExperimentConfig`` and the models nested in it), laid out in
  the sections users write (``simulation:``, ``explicit:``, …);
- ``louder:backends``: the model backend registry (``louder backends``);
- ``louder:analysis-tables``: every table the analysis writes, with its columns, from the measure
  registry (``louder.analysis.engine.registry``: each measure documents its own tables).

The generators are plain functions, also used by ``tests/test_docs.py``.
"""

from __future__ import annotations

import html
import sys
import types
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # build from this checkout's louder, not another installed copy
    sys.path.insert(0, str(ROOT))


def _cell(text: str) -> str:
    """Text for a Markdown table cell: no line breaks, no raw HTML, no column separators."""
    return html.escape(" ".join(str(text).split()), quote=False).replace("|", "\\|")


def _code(text: str) -> str:
    """Inline code for a table cell (a pipe still needs escaping inside a table)."""
    text = str(text).replace("|", "\\|")
    return f"``{text}``" if "`" in text else f"`{text}`"


# --- the command line -----------------------------------------------------------------------------

def _metavar(param, ctx) -> str:
    record = param.get_help_record(ctx)
    if not record or param.is_flag:
        return ""
    opts = record[0]
    meta = opts.rsplit(" ", 1)[-1] if " " in opts else ""
    return {"<list[str]>": "<text>", "<str>": "<text>"}.get(meta, meta)


def _default(param) -> str:
    if param.required:
        return "required"
    d = param.default
    if d is None or d == () or (param.is_flag and d is False and not param.secondary_opts):
        return ""
    if isinstance(d, Path):
        d = str(d)
    return _code(d)


def _command_markdown(cmd, ctx, level: int) -> list[str]:
    lines = [f"{'#' * level} `{ctx.command_path}`", ""]
    if cmd.help:
        lines += [" ".join(cmd.help.split()), ""]
    pieces = " ".join(cmd.collect_usage_pieces(ctx))
    lines += ["```text", f"{ctx.command_path} {pieces}", "```", ""]
    args = [p for p in cmd.params if type(p).__name__.endswith("Argument")]
    opts = [p for p in cmd.params if type(p).__name__.endswith("Option")]
    if args:
        lines += ["| argument | description |", "|---|---|"]
        for p in args:
            need = "" if p.required or "optional" in (p.help or "") else " (optional)"
            lines.append(f"| `{p.name.upper()}` | {_cell((p.help or '') + need)} |")
        lines.append("")
    if opts:
        lines += ["| option | value | default | description |", "|---|---|---|---|"]
        for p in opts:
            names = " / ".join(", ".join(sorted(group, key=len)) for group in (p.opts, p.secondary_opts) if group)
            value = _metavar(p, ctx)
            if p.multiple:
                value = f"{value} (repeatable)"
            lines.append(f"| {_code(names)} | {_cell(value)} | {_default(p)} | {_cell(p.help or '')} |")
        lines.append("")
    return lines


def cli_markdown() -> str:
    """Every ``louder`` command, sub-command and option, from the typer app itself."""
    import typer

    from louder.cli import app

    root = typer.main.get_command(app)
    root_ctx = typer.Context(root, info_name="louder")
    out: list[str] = []

    def walk(cmd, ctx, level):
        commands = getattr(cmd, "commands", None)
        if commands is None:
            out.extend(_command_markdown(cmd, ctx, level))
            return
        if ctx.parent is not None:
            out.extend([f"{'#' * level} `{ctx.command_path}`", "", " ".join((cmd.help or "").split()), ""])
        for name, sub in commands.items():
            walk(sub, type(ctx)(sub, info_name=name, parent=ctx), level + (1 if ctx.parent is not None else 0))

    walk(root, root_ctx, 2)
    return "\n".join(out)


# --- the config file ------------------------------------------------------------------------------

def _type(annotation) -> str:
    """A readable type: ``list of text``, ``one of: a, b``, ``integer or null`` …"""
    from pydantic import BaseModel

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return "one of: " + ", ".join(str(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [_type(a) for a in args if a is not type(None)]
        return " or ".join(parts) + (" or null" if type(None) in args else "")
    if origin is list:
        return f"list of {_type(args[0])}" if args else "list"
    if origin is dict:
        return "mapping"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        from louder.sections import Section

        if issubclass(annotation, Section):
            return "section (below)"
        return {"GenerationParams": "{temperature, max_tokens}", "ModelConfig": "model entry",
                "NetworkConfig": "network mapping", "ControlConfig": "control mapping",
                "SequentialConfig": "sequential mapping"}.get(annotation.__name__,
                                                                                         annotation.__name__)
    return {str: "text", int: "integer", float: "number", bool: "true/false"}.get(annotation, str(annotation))


def _yaml_value(value) -> str:
    import yaml
    from pydantic import BaseModel

    def plain(v):
        if isinstance(v, BaseModel):
            return {k: plain(x) for k, x in v.model_dump(exclude_defaults=True).items()} or v.model_dump()
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    return yaml.safe_dump(plain(value), default_flow_style=True, width=10_000, allow_unicode=True,
                          sort_keys=False).strip().removesuffix(
        "\n...").removesuffix(" ...")


def _field_default(field) -> str:
    from pydantic_core import PydanticUndefined

    from louder.sections import Section

    if isinstance(field.annotation, type) and issubclass(field.annotation, Section):
        return "(below)"
    if field.default_factory is not None:
        return _code(_yaml_value(field.default_factory()))
    if field.default is PydanticUndefined:
        return "required"
    return _code(_yaml_value(field.default))


def _bounds(field) -> str:
    out = []
    for m in field.metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"), ("min_length", "items ≥")):
            if getattr(m, attr, None) is not None:
                out.append(f"{sign} {getattr(m, attr):,}")
    return ", ".join(out)


def _field_rows(model, names: dict[str, str] | None = None) -> list[str]:
    """One table row per field: ``names`` maps the key users write → the model's field name."""
    names = names or {n: n for n in model.model_fields}
    rows = ["| key | type | default | range | description |", "|---|---|---|---|---|"]
    for key, flat in names.items():
        f = model.model_fields[flat]
        rows.append(f"| `{key}` | {_cell(_type(f.annotation))} | {_field_default(f)} | {_cell(_bounds(f))} | "
                    f"{_cell(f.description or '')} |")
    return rows + [""]


def config_markdown() -> str:
    """Every config field, in the layout users write: the shared top-level keys, then each section (a
    pydantic model beside the code it configures), then the mappings nested in them, then the flat keys
    of earlier versions."""
    from louder.config import MOVED, SECTION_MODELS, TOP, ControlConfig, ExperimentConfig, GenerationParams
    from louder.llm.spec import ModelConfig

    out = ["## Top-level keys", "",
           "Shared by every kind of run (models, seed, concurrency, cache …), and the sections below.", ""]
    out += _field_rows(ExperimentConfig, {n: n for n in (*TOP, *SECTION_MODELS)})
    for section, model in SECTION_MODELS.items():
        where = model.__module__.replace(".", "/") + ".py"
        out += [f"## `{section}:`", "", " ".join((model.__doc__ or "").split("Examples")[0].split()) +
                f" (`{model.__name__}`, `{where}`)", ""]
        out += _field_rows(model)
    out += ["## Entries of `models:`", "",
            "A plain string is read as `spec`; a mapping sets per-model options.", ""]
    out += _field_rows(ModelConfig)
    out += ["## `influence.control:`", "", " ".join((ControlConfig.__doc__ or "").split()), ""]
    out += _field_rows(ControlConfig)
    out += ["## Generation parameters", "",
            "Every `{temperature, max_tokens}` mapping above (`simulation.persona`, `explicit.params`, …).", ""]
    out += _field_rows(GenerationParams)
    out += ["## Deprecated flat keys", "",
            "Configs of earlier versions wrote most keys at the top level. They still work for one release, with "
            "one warning naming their new place; a bare `explicit: {temperature, max_tokens}` (or `association:`, "
            "`beliefs:`) is still read as the old generation parameters.", "",
            "| flat key | write instead |", "|---|---|"]
    out += [f"| `{flat}` | `{new}` |" for flat, new in MOVED.items()] + [""]
    return "\n".join(out)


# --- the backend registry -------------------------------------------------------------------------

def backends_markdown() -> str:
    from louder.llm.registry import BUILTIN, backend_info

    rows = ["| prefix | spec forms | score mode | runs | calls in flight | API key | reasoning control |",
            "|---|---|---|---|---|---|---|"]
    for p in sorted(BUILTIN):  # the built-in ones: the site never lists a package installed where it is built
        info = backend_info(p)
        rows.append(f"| `{p}` | {'<br>'.join(_code(f) for f in info.forms)} | {'yes' if info.can_score else 'no'} | "
                    f"{'here' if info.local else 'remote'} | {info.concurrency or 'config'} | "
                    f"{_code('$' + info.needs_key) if info.needs_key else '–'} | "
                    f"{', '.join(_code(c) for c in info.reasoning_controls) or '–'} |")
    return "\n".join(rows) + "\n"


# --- the measure registry: the analysis tables ---------------------------------------------------

def _doc_cell(text: str) -> str:
    """Markdown of a table cell: one line, column separators escaped (the text keeps its own Markdown)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def analysis_tables_markdown() -> str:
    """Every table of every measure (``louder.analysis.engine.registry``): a heading, what it holds and which
    measure writes it, and its columns with their meaning."""
    from louder.analysis.engine import registry

    out = []
    for m in registry.measures():
        for i, t in enumerate(m.tables):
            out += [f"### `{t.name}.csv`", "", f"{_doc_cell(t.doc)} (Measure `{m.name}`: {_doc_cell(m.summary)}.)", ""]
            if m.options and i == 0:  # a measure's options, once, under its first table
                out += [f"Options (`louder analyze RUN --set {m.name}.OPTION=VALUE`): " + "; ".join(
                    f"{_code(o.name)} ({o.type_name}, default {_code(_default(o))}"
                    + (f", shorthand {_code(o.flag)}" if o.flag else "") + f"): {_doc_cell(o.doc)}"
                    for o in m.options) + ".", ""]
            out += ["| column | meaning |", "|---|---|"]
            out += [f"| {', '.join(_code(n) for n in c.names)} | {_doc_cell(c.doc)} |" for c in t.columns] + [""]
    return "\n".join(out)


def _default(option) -> str:
    d = option.default
    return "none" if d in (None, ()) else str(d).lower() if isinstance(d, bool) else str(d)


GENERATORS = {"cli": cli_markdown, "config": config_markdown, "backends": backends_markdown,
              "analysis-tables": analysis_tables_markdown}


def expand(markdown: str) -> str:
    """A page's Markdown with every generated reference in place of its marker."""
    return on_page_markdown(markdown, None, None, None)


def on_page_markdown(markdown: str, page, config, files) -> str:
    for name, make in GENERATORS.items():
        marker = f"<!-- louder:{name} -->"
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown
