"""The rules engine (DESIGN "How the e-graph should see a program"): sorts, encode/decode, the group registry,
facts, the scheduler, the optimizer and per-group IR diffs. The rules themselves live in ``rulebooks/``.

Public functions (``intent_eqsat.pipeline`` and the CLI look them up here): :func:`optimize`, :func:`optimize_kir`,
:func:`list_rules` / :func:`rules_list`, :func:`show_rule` / :func:`rule_show`, :func:`diff`,
:func:`rulebook_versions`, :func:`audit` (``rules audit``). Like ``intent_eqsat.ir.verify``, the functions ``optimize``, ``diff`` and ``audit`` shadow their
submodules of the same name: import from the submodules with ``from intent_eqsat.rules.optimize import ...``.
"""
from __future__ import annotations

from intent_eqsat.rules.schedule import GroupRun, Limits, make_limits
from intent_eqsat.rules.registry import RulebookError, load as load_rulebooks
from intent_eqsat.rules.optimize import (OptimizeResult, GroupVerificationError, OptimizeError,
                                         optimize_kir, rule_show, rules_list)
from intent_eqsat.rules.optimize import optimize
from intent_eqsat.rules.diff import diff
from intent_eqsat.rules.audit import AuditResult, audit


def list_rules(rulebooks=None):
    """CLI ``rules list``: every rule with its group, law and ``file:line``."""
    return rules_list(rulebooks)


def show_rule(name, rulebooks=None):
    """CLI ``rules show NAME``: a rule (or a group) with its law, location, egglog text and declaration."""
    return rule_show(name, rulebooks)


def rulebook_versions(rulebooks=None):
    """Per group source hashes and ``all`` (rulebooks + engine), for cache keys."""
    from intent_eqsat.rules.registry import versions
    return versions(rulebooks)


__all__ = ["optimize", "optimize_kir", "OptimizeResult", "Limits", "make_limits", "GroupRun", "OptimizeError",
           "GroupVerificationError", "RulebookError", "load_rulebooks", "rules_list", "rule_show", "list_rules",
           "show_rule", "diff", "rulebook_versions", "audit", "AuditResult"]
