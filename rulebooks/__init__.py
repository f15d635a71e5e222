"""The rules, one module per transformation group (STYLE item 1; the registry is ``intent_eqsat.rules.registry``).

Module contract (checked by ``registry.load``; see ``docs/rules.md``):

- module docstring = the group's PASS-1 declaration: a summary, then ``Reads:``, ``Legality:``, ``Rewrites:``,
  ``Preserves:``, ``Invalidates:``, ``Verifier:`` at the start of a line;
- ``GROUP = "<module name>"``; ``ORDER = <int>`` (PASS-3 as run here: neutralize 15, blocking 20, reduction 21,
  remat 22, mapping 25, online 28, online_tiles 29, contraction 30, narrowing 40); ``RULESET = ruleset(name=GROUP)``;
- ``rules()`` -> ``[registry.rule("<group>.<name>", egglog_rule, "law"), ...]`` (or ``(name, rule, law)`` tuples);
- optional ``SCHEDULE = "saturate" | "backoff"``, ``ANALYSES = (ruleset, ...)``, ``seed(graph)``.

Compile options and target features are facts from ``intent_eqsat.rules.facts`` (``OptNumerics``, ``OptOnline``,
``TileCand``, ``TargetInt``, ``TargetHas``, ``Remark``): import them, never declare a copy.
"""
