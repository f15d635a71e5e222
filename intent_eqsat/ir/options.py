"""Compile options from what callers write: a :class:`~intent_eqsat.ir.core.CompileOptions`, None (the defaults)
or a mapping of field names to values (SPEC PASS-1.1). Here, below the pipeline and the optimizer, so both read
options one way without importing each other."""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from intent_eqsat.errors import UsageError
from intent_eqsat.ir.core import FP32_CONTRACT, NUMERICS, CompileOptions

_OPTION_ALIASES = {"numerics": "numerics", "online_reduction": "online_reduction",
                   "onlinereduction": "online_reduction", "optimization_remarks": "optimization_remarks",
                   "optimizationremarks": "optimization_remarks", "subscript_checks": "subscript_checks",
                   "subscriptchecks": "subscript_checks", "fp32_contract": "fp32_contract",
                   "fp32contract": "fp32_contract"}


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise UsageError(f"option {key}: expected true or false, got {value!r}")


def make_options(options: "CompileOptions | Mapping[str, Any] | None") -> CompileOptions:
    """:class:`CompileOptions` from ``None`` (the defaults), an instance, or a mapping of field names to values
    (strings like ``"true"`` accepted, so CLI ``k=v`` pairs can be passed as they are)."""
    if options is None:
        return CompileOptions()
    if isinstance(options, CompileOptions):
        return options
    if not isinstance(options, Mapping):
        raise UsageError(f"options must be a CompileOptions or a dict, got {type(options).__name__}")
    fields: dict[str, Any] = {}
    for raw_key, value in options.items():
        key = _OPTION_ALIASES.get(str(raw_key).replace("-", "_").lower())
        if key is None:
            known = ", ".join(f.name for f in dataclasses.fields(CompileOptions))
            raise UsageError(f"unknown compile option {raw_key!r} (known: {known})")
        fields[key] = value
    if "numerics" in fields and fields["numerics"] not in NUMERICS:
        raise UsageError(f"option numerics: expected one of {', '.join(NUMERICS)}, got {fields['numerics']!r}")
    if "fp32_contract" in fields and fields["fp32_contract"] not in FP32_CONTRACT:
        raise UsageError(f"option fp32_contract: expected one of {', '.join(FP32_CONTRACT)}, got "
                         f"{fields['fp32_contract']!r}")
    for key in ("online_reduction", "optimization_remarks", "subscript_checks"):
        if key in fields:
            fields[key] = _as_bool(key, fields[key])
    return dataclasses.replace(CompileOptions(), **fields)
