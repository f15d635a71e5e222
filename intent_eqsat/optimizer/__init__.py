"""The optimizer (SPEC PASS-3..PASS-6): runs the rule groups of ``rulebooks/`` over a program's e-graph
(:mod:`intent_eqsat.rules`), extracts with the cost model (:mod:`intent_eqsat.extract`), binds the tile parameters
(:mod:`.tiles`, :mod:`.size_buckets`), runs the post-extraction passes and verifies; :mod:`.audit` validates rule
groups (``rules audit``) and :mod:`.diff` prints what each group changed.

Layering (issue 22 item 4): ``ir``/``kir`` at the bottom, then ``rules`` (the e-graph encoding and scheduler),
``extract`` (cost and extraction over an e-graph export), ``construct``, and this package on top of them.

Public functions (``intent_eqsat.pipeline`` and the CLI use them): :func:`optimize`, :func:`optimize_kir`,
:func:`list_rules` / :func:`rules_list`, :func:`show_rule` / :func:`rule_show`, :func:`diff`, :func:`audit`.
Like ``intent_eqsat.ir.verify``, the functions ``optimize``, ``diff`` and ``audit`` shadow their submodules of the
same name: import other names from the submodules (``from intent_eqsat.optimizer.optimize import ...``).
"""
from __future__ import annotations

from intent_eqsat.rules import GroupRun, Limits, RulebookError, load_rulebooks, make_limits, rulebook_versions
from intent_eqsat.optimizer.optimize import (OptimizeResult, GroupVerificationError, OptimizeError,
                                             optimize_kir, rule_show, rules_list)
from intent_eqsat.optimizer.optimize import optimize
from intent_eqsat.optimizer.diff import diff
from intent_eqsat.optimizer.audit import AuditResult, audit


def list_rules(rulebooks=None):
    """CLI ``rules list``: every rule with its group, law and ``file:line``."""
    return rules_list(rulebooks)


def show_rule(name, rulebooks=None):
    """CLI ``rules show NAME``: a rule (or a group) with its law, location, egglog text and declaration."""
    return rule_show(name, rulebooks)


__all__ = ["optimize", "optimize_kir", "OptimizeResult", "Limits", "make_limits", "GroupRun", "OptimizeError",
           "GroupVerificationError", "RulebookError", "load_rulebooks", "rules_list", "rule_show", "list_rules",
           "show_rule", "diff", "rulebook_versions", "audit", "AuditResult"]
