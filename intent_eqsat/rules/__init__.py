"""The e-graph engine (DESIGN "How the e-graph should see a program"): sorts, encode/decode, the canonical form,
the group registry, facts and the scheduler. The rules themselves live in ``rulebooks/``; the optimizer that runs
them, extracts, binds tile parameters and audits is :mod:`intent_eqsat.optimizer`, one layer up (issue 22 item 4:
this package imports nothing above ``ir``, ``kir`` and ``errors``).
"""
from __future__ import annotations

from intent_eqsat.rules.schedule import GroupRun, Limits, make_limits
from intent_eqsat.rules.registry import RulebookError, load as load_rulebooks


def rulebook_versions(rulebooks=None):
    """Per group source hashes and ``all`` (rulebooks + engine), for cache keys."""
    from intent_eqsat.rules.registry import versions
    return versions(rulebooks)


__all__ = ["Limits", "make_limits", "GroupRun", "RulebookError", "load_rulebooks", "rulebook_versions"]
