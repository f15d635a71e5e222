"""intent-eqsat: an equality-saturation optimizer of GPU kernels (KIR -> shared GPU IR -> Triton / cuTile)."""
from intent_eqsat.errors import IntentError, SourceLocation
from intent_eqsat.version import __version__
__all__ = ["IntentError", "SourceLocation", "__version__", "compile", "optimize", "CompiledKernel"]


def __getattr__(name: str):
    # the public API (intent_eqsat/api.py), imported on first use so that `import intent_eqsat` stays light
    if name in ("compile", "optimize", "CompiledKernel"):
        from intent_eqsat import api

        return getattr(api, name)
    raise AttributeError(f"module 'intent_eqsat' has no attribute {name!r}")
