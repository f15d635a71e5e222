"""intent-eqsat: an equality-saturation optimizer of GPU kernels (KIR -> shared GPU IR -> Triton / cuTile)."""
from intent_eqsat.errors import IntentError, SourceLocation

__version__ = "0.1.0"
__all__ = ["IntentError", "SourceLocation", "__version__"]
