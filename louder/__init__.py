"""louder: find implicit bias in language models by watching what persona-driven agents do."""

__version__ = "0.1.0"
