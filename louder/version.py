"""louder's version, in a module of its own: what every part of louder reads (a run folder's data state,
the manifests) without importing the package's API."""

__version__ = "0.1.0"
