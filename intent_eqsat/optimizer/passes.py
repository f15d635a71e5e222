"""The transformation groups that run after extraction, declared like the egglog rule groups (issue 22 item 1,
STYLE "every transformation is a declared group", SPEC PASS-1 / PASS-2).

The optimizer extracts one program from the e-graph and then changes it in Python: it binds the tile parameters
(``tile_binding``), moves the coordinates no summary reads into loops (``summary_owner``), carries a scan's prefix
across column tiles (``carried_prefix``), splits one-program reductions over programs (``split_reduction``),
narrows loop ranges (``range_skip``, ``tail_split``), unswitches loops that run once under a launch guard
(``unswitch_single_trip``, ``unswitch_siblings``), fuses sibling loops that re-read one view (``sibling_fusion``)
and orders the programs (``program_order``). Each of them is a :class:`PassGroup` here:

- its PASS-1 declaration is parsed from the docstring of the module that implements it, under the same six
  headings as a rulebook (``- Reads:`` ... ``- Verifier:`` bullets; :func:`declaration_of`);
- ``rules list`` lists it (one row, named like the group), ``rules show NAME`` prints its declaration;
- the optimizer runs it in ``ORDER`` after the rule groups, verifies the program with the shared verifier after
  it whenever it changed the program (a failure is a ``GroupVerificationError`` naming it), and reports it with
  the rule groups (``report["groups"]``, ``rules_fired`` counts the kernels it changed, ``phases["group:NAME"]``);
- ``rules audit`` validates its output against the KIR reference on the corpus like a rule group's
  (:mod:`intent_eqsat.optimizer.audit`); ``intent-eqsat opt FILE.gir --group NAME`` runs it alone (golden tests).

Selection: a pass runs when the rule group it belongs to (``with_group``: ``narrowing``, ``remat``, ``mapping``)
is selected, or when it is named in ``groups=`` itself; one without a rule group (``with_group=None``) runs
whenever the optimizer binds a program. ``tile_binding`` is run by the optimizer itself (the binding is ranked by
the cost model over the extraction's candidates); its ``run`` is None.

The launch resources (threads, stages, index width) are not a group: they do not change the program; the optimizer
chooses them beside it for the provider (:mod:`intent_eqsat.extract.resources`, issue 22 item 3).
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from types import ModuleType
from typing import Callable, Iterable, Sequence

from intent_eqsat.ir.core import CompileOptions, Kernel
from intent_eqsat.rules.registry import HEADINGS, Declaration, RulebookError, _rel

#: where the post-extraction groups start in the PASS-3 order (every rule group's ORDER is below it)
FIRST_PASS_ORDER = 100
#: groups below this ORDER run before the launch resources are chosen: they change what the resources serve (the
#: program count and fragment shapes); the later ones narrow ranges of a program whose resources are chosen
RESOURCES_ORDER = 108


@dataclass(frozen=True)
class PassContext:
    """What a pass may read besides the kernel: the compile options and the target's L2 size."""

    options: CompileOptions
    l2_bytes: int
    #: the cost model's price of a bound kernel at the compile sizes (None: no model, e.g. ``opt --group``)
    cost: Callable[[Kernel], float] | None = None

    @property
    def relaxed(self) -> bool:
        return self.options.numerics == "relaxed_normalization"


@dataclass(frozen=True, eq=False)
class PassGroup:
    """A declared transformation group written in Python, run on the bound program after extraction."""

    name: str
    order: int
    summary: str
    declaration: Declaration
    location: str                       #: ``file:line`` of the function that implements it
    with_group: str | None              #: the rule group whose selection turns it on (None: always)
    run: Callable[[Kernel, PassContext], Kernel] | None      #: None: run by the optimizer itself (binding)

    kind = "pass"

    def as_rule_dict(self) -> dict[str, str]:
        """Its row in ``rules list``: a pass is one rule of its own group."""
        return {"name": self.name, "group": self.name, "law": self.summary, "location": self.location}

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "order": self.order, "kind": self.kind, "with_group": self.with_group,
                "location": self.location, "declaration": self.declaration.as_dict()}

    def text(self) -> str:
        """``rules show NAME`` for a pass."""
        turned_on = (f"runs when the rule group {self.with_group!r} is selected, or when named"
                     if self.with_group else "runs whenever the optimizer binds a program")
        return (f"group {self.name} (ORDER {self.order}, post-extraction pass; {turned_on}) {self.location}\n\n"
                f"{self.declaration.text()}\n")


_BULLET = re.compile(r"^- (%s):\s?(.*)$" % "|".join(HEADINGS))


def declaration_of(module: ModuleType, summary: str, *, after: str, before: str | None = None) -> Declaration:
    """The six ``- Heading:`` bullets of ``module``'s docstring between the line containing ``after`` and the one
    containing ``before`` (the end when None). A missing or empty heading is a :class:`RulebookError` naming the
    module, as for a rulebook."""
    where = _rel(inspect.getsourcefile(module) or module.__name__)
    doc = inspect.getdoc(module) or ""
    lines = doc.splitlines()
    start = next((i for i, line in enumerate(lines) if after in line), None)
    if start is None:
        raise RulebookError(f"no declaration section {after!r} in the module docstring", where)
    end = next((i for i in range(start + 1, len(lines)) if before is not None and before in lines[i]), len(lines))
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines[start + 1:end]:
        m = _BULLET.match(line)
        if m:
            if m.group(1) in sections:
                raise RulebookError(f"heading {m.group(1)}: appears twice in the declaration", where)
            current = sections.setdefault(m.group(1), [m.group(2)])
        elif current is not None and line.startswith("  "):
            current.append(line.strip())
        else:
            current = None
    missing = [h for h in HEADINGS if not " ".join(sections.get(h, [])).strip()]
    if missing:
        raise RulebookError(f"the declaration lacks heading(s) {', '.join(h + ':' for h in missing)} (SPEC PASS-1)",
                            where)
    return Declaration(summary, *(re.sub(r"\s+", " ", " ".join(sections[h])).strip() for h in HEADINGS))


def _location(fn: Callable) -> str:
    return f"{_rel(inspect.getsourcefile(fn) or '?')}:{inspect.getsourcelines(fn)[1]}"


def _build() -> tuple[PassGroup, ...]:
    from intent_eqsat.ir import carried_prefix, program_order, range_skip, split_reduction, summary_owner, \
        tail_split, unswitch
    from intent_eqsat.ir.carried_prefix import carry_prefix_loops
    from intent_eqsat.ir.split_reduction import split_scalar_reductions
    from intent_eqsat.ir.summary_owner import own_summaries
    from intent_eqsat.ir import sibling_fusion
    from intent_eqsat.ir.program_order import order_by_work
    from intent_eqsat.ir.sibling_fusion import fuse_sibling_loops
    from intent_eqsat.ir.range_skip import narrow_lane_ranges
    from intent_eqsat.ir.tail_split import split_tile_tails
    from intent_eqsat.ir.unswitch import unswitch_sibling_loops, unswitch_single_trip_loops
    from intent_eqsat.optimizer import tiles
    from intent_eqsat.optimizer.tiles import bind

    def make(name: str, order: int, module: ModuleType, fn: Callable, summary: str, with_group: str | None,
             run: Callable[[Kernel, PassContext], Kernel] | None, *, after: str = "Declaration (SPEC PASS-1)",
             before: str | None = None) -> PassGroup:
        return PassGroup(name, order, summary, declaration_of(module, summary, after=after, before=before),
                         _location(fn), with_group, run)

    return (
        make("tile_binding", 100, tiles, bind, "each tile parameter becomes the literal of the best-costed binding",
             None, None, after="Declaration of the ``tile_binding`` group"),
        make("summary_owner", 103, summary_owner, own_summaries,
             "program coordinates no summary reads become loops, so each summary is computed once per owner",
             "remat", lambda k, ctx: own_summaries(k, ctx.cost)),
        make("carried_prefix", 104, carried_prefix, carry_prefix_loops,
             "a prefix every column-tile program re-sums is carried across the column tiles of one program",
             "remat", lambda k, ctx: carry_prefix_loops(k, ctx.cost)),
        make("split_reduction", 105, split_reduction, split_scalar_reductions,
             "a reduction that does not fill the GPU is split over more programs; the last to finish combines",
             "reduction", lambda k, ctx: split_scalar_reductions(k, ctx.cost)),
        make("range_skip", 110, range_skip, narrow_lane_ranges,
             "a loop's all-true iterations run unchecked; an all-false end that changes nothing is removed",
             "narrowing", lambda k, ctx: narrow_lane_ranges(k, ctx.relaxed)),
        make("tail_split", 111, tail_split, split_tile_tails,
             "a tiled matrix-unit loop runs its full tiles without the tail check, the last tile checked",
             "narrowing", lambda k, ctx: split_tile_tails(k)),
        make("unswitch_single_trip", 120, unswitch, unswitch_single_trip_loops,
             "a blocking loop that runs once under a launch guard is inlined in a guarded copy of its outer loop",
             None, lambda k, ctx: unswitch_single_trip_loops(k), before="**Sibling loops"),
        make("unswitch_siblings", 121, unswitch, unswitch_sibling_loops,
             "sibling passes over one row that each run once under a launch guard run inlined in a guarded copy",
             "remat", lambda k, ctx: unswitch_sibling_loops(k), after="**Sibling loops"),
        make("sibling_fusion", 125, sibling_fusion, fuse_sibling_loops,
             "sibling loops over one range that read the same views run as one loop, each tile loaded once",
             "remat", lambda k, ctx: fuse_sibling_loops(k)),
        make("program_order", 130, program_order, order_by_work,
             "programs whose loops run longest start first, in L2-sized groups of rows",
             "mapping", lambda k, ctx: order_by_work(k, ctx.l2_bytes)),
    )


_PASSES: tuple[PassGroup, ...] | None = None


def all_passes() -> tuple[PassGroup, ...]:
    """Every post-extraction group, in ORDER."""
    global _PASSES
    if _PASSES is None:
        _PASSES = tuple(sorted(_build(), key=lambda p: (p.order, p.name)))
    return _PASSES


def names() -> list[str]:
    return [p.name for p in all_passes()]


def get(name: str) -> PassGroup:
    for p in all_passes():
        if p.name == name:
            return p
    raise LookupError(f"no post-extraction group {name!r} (known: {', '.join(names())})")


def split_names(wanted: Iterable[str] | None) -> tuple[list[str] | None, list[str]]:
    """``groups=`` names -> (the rule group names or None for all, the pass names among them)."""
    if wanted is None:
        return None, []
    wanted = list(wanted)
    known = set(names())
    return [n for n in wanted if n not in known], [n for n in wanted if n in known]


def select(rule_groups: Sequence[str], named: Sequence[str] = (), *, every: bool = False) -> list[PassGroup]:
    """The passes that run with these rule groups selected: every pass when ``every`` (no ``groups=`` given),
    else those named, those without a rule group and those whose rule group is selected."""
    chosen = set(rule_groups)
    return [p for p in all_passes()
            if every or p.name in named or p.with_group is None or p.with_group in chosen]


__all__ = ["PassGroup", "PassContext", "FIRST_PASS_ORDER", "RESOURCES_ORDER", "all_passes", "names", "get", "select",
           "split_names", "declaration_of"]
