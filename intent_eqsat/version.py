"""The package version (one place: the package, the CLI and the cache key read it; no imports)."""

__version__ = "0.1.0"
