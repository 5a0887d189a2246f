"""What an analysis shows: the report page (``page``: ``write_report``), its findings and design card
(``findings``), the agents' own words (``words``), and the pieces every measure's section and figure is
made of — HTML (``html``), drawing primitives (``draw``) and the one palette (``palette``)."""


def __getattr__(name: str):
    # ``louder.analysis.report`` was one module: its functions stay reachable here, imported when asked
    # (importing the page at package import would load the whole analysis for a figure's palette)
    if name in ("write_report", "render", "sections", "environment_table"):
        from louder.analysis.report import page

        return getattr(page, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
