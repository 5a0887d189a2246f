"""louder's own measures, one module each, found by the registry in this package
(``louder.analysis.engine.registry``: it imports every module here when it is first read). Each module
builds its tables from the run folder's inputs with the statistics of ``louder.analysis.stats`` (its
own under the same name: ``louder.analysis.stats.voices`` for ``voices``), draws its figures, and
declares its tables, console tables, figures and report section in one ``register(Measure(...))``."""
