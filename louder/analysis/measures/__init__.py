"""louder's own measures, one module each (``louder.analysis.engine.registry.BUILTIN``). Each module builds
its tables from the run folder's inputs with the statistics of ``louder.analysis`` (``stats``,
``intervals``, ``rates``, …), and declares them, its console tables and its report section in one
``register(Measure(...))``. The registry imports them when it is first read."""
