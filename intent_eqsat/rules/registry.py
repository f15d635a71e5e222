"""The registry of transformation groups (STYLE item 1, SPEC PASS-1 / PASS-2).

A *transformation group* is one module under ``rulebooks/``. Its contract:

- the module docstring is its PASS-1 declaration: a summary paragraph, then the six fixed headings ``Reads:``,
  ``Legality:``, ``Rewrites:``, ``Preserves:``, ``Invalidates:``, ``Verifier:`` (each at the start of a line, text
  after the colon and on the following lines up to the next heading). They are parsed into a :class:`Declaration`;
- ``GROUP = "<name>"`` equal to the module's file stem (the registry key);
- ``ORDER = <int>``: its place in the PASS-3 order (mapping 3.2 = 10, blocking 3.3 = 20, contraction / remat /
  boundary 3.4 = 30, online PASS-1.2 = 35, ranges 3.5 = 40); ties run in name order;
- ``RULESET``: an egglog ``ruleset``;
- ``rules()``: every rule of the group, each as a :class:`Rule` (make one with :func:`rule`, which records the
  ``file:line`` where it is written), or as a tuple ``(name, egglog_rule, law)`` / ``(name, egglog_rule, law,
  "file:line")``. Names are ``"<group>.<short_name>"`` and unique. Rules missing from ``RULESET`` are appended to it;
  a rule in ``RULESET`` that ``rules()`` does not name is an error (every rule belongs to a group, with a name);
- optional ``SCHEDULE = "saturate" | "backoff"`` (default ``"saturate"``; see :mod:`intent_eqsat.rules.schedule`),
  ``ANALYSES = (ruleset, ...)``: terminating analysis rulesets saturated before each iteration of the group
  (e.g. :data:`intent_eqsat.rules.patterns.ANALYSIS` for ``HasAttr`` / ``ValTy``), and ``seed(graph)``: called once
  per kernel e-graph (a ``KernelGraph``) before any group runs, to assert facts about the input's own terms with
  ``graph.fact(Relation, term)``, e.g. ``graph.fact(Unblocked, graph.term.args[1])`` (a fact on an e-class holds
  for every term later unioned into it, so "this is the input's term" can only be said before rules run).

:func:`load` finds the groups, checks the contract and raises :class:`RulebookError` (an ``IntentError`` located at
the rulebook file) when it is broken. :func:`version` is a short hash of the rulebook and engine sources (for cache
keys).
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Sequence

from egglog import Ruleset

from intent_eqsat.errors import IntentError, UsageError

HEADINGS = ("Reads", "Legality", "Rewrites", "Preserves", "Invalidates", "Verifier")
SCHEDULES = ("saturate", "backoff")
#: PASS-3 order of the known groups (documentation; each module states its own ORDER)
PASS3_ORDER = {"neutralize": 15, "blocking": 20, "reduction": 21, "remat": 22, "mapping": 25, "contraction": 30,
               "online": 28, "online_tiles": 29, "narrowing": 40}

_ENGINE_FILES = ("sorts.py", "terms.py", "encode.py", "decode.py", "egraph.py", "patterns.py", "facts.py",
                 "schedule.py", "registry.py")


class RulebookError(IntentError):
    """A rulebook module breaks the group contract (missing heading, GROUP mismatch, unnamed rule, ...)."""


class UnknownRulebook(UsageError, LookupError):
    """A ``rulebooks`` argument names no module, file or directory: a usage error (CLI exit 2), and a LookupError
    for callers that catch unknown names."""


@dataclass(frozen=True)
class Declaration:
    """A group's PASS-1 declaration, parsed from its module docstring."""

    summary: str
    reads: str
    legality: str
    rewrites: str
    preserves: str
    invalidates: str
    verifier: str

    def as_dict(self) -> dict[str, str]:
        return {"summary": self.summary, **{h.lower(): getattr(self, h.lower()) for h in HEADINGS}}

    def text(self) -> str:
        out = [self.summary] if self.summary else []
        for h in HEADINGS:
            out.append(f"{h}: {getattr(self, h.lower())}")
        return "\n\n".join(out)


@dataclass(frozen=True, eq=False)
class Rule:
    """One named rule: its egglog object (``rewrite``/``birewrite``/``rule``), its law and where it is written."""

    name: str
    egg: Any
    law: str = ""
    location: str = ""

    @property
    def group(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def short_name(self) -> str:
        return self.name.split(".", 1)[1] if "." in self.name else self.name

    @property
    def decl(self) -> Any:
        return self.egg.decl

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "group": self.group, "law": self.law, "location": self.location}

    def egglog_text(self) -> str:
        return str(self.egg)


def rule(name: str, egg: Any, law: str = "", *, depth: int = 1) -> Rule:
    """A :class:`Rule` that records the ``file:line`` of the caller (``depth`` frames up) - tinygrad style, so
    reports and ``rules show`` name where each rule is written."""
    frame = sys._getframe(depth)
    return Rule(name, egg, law, f"{_rel(frame.f_code.co_filename)}:{frame.f_lineno}")


@dataclass(frozen=True, eq=False)
class Group:
    """A loaded transformation group."""

    name: str
    order: int
    module: ModuleType
    path: str
    declaration: Declaration
    ruleset: Ruleset
    rules: tuple[Rule, ...]
    schedule: str = "saturate"
    analyses: tuple[Ruleset, ...] = ()
    source_hash: str = ""
    seed: Any = None

    def rule(self, name: str) -> Rule:
        for r in self.rules:
            if r.name == name or r.short_name == name:
                return r
        raise LookupError(f"group {self.name} has no rule {name!r}")

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "order": self.order, "path": self.path, "schedule": self.schedule,
                "declaration": self.declaration.as_dict(), "rules": [r.name for r in self.rules],
                "version": self.source_hash}


@dataclass(frozen=True, eq=False)
class Registry:
    """Groups in run order (ORDER, then name)."""

    groups: tuple[Group, ...]
    version: str

    def group(self, name: str) -> Group:
        for g in self.groups:
            if g.name == name:
                return g
        raise LookupError(f"no transformation group {name!r} (known: {', '.join(self.names) or 'none'})")

    @property
    def names(self) -> list[str]:
        return [g.name for g in self.groups]

    def rules(self) -> list[Rule]:
        return [r for g in self.groups for r in g.rules]

    def rule(self, name: str) -> Rule:
        for r in self.rules():
            if r.name == name:
                return r
        raise LookupError(f"no rule named {name!r}")

    def select(self, names: Iterable[str] | None) -> list[Group]:
        """The named groups in run order (all when ``names`` is None); unknown names raise LookupError."""
        if names is None:
            return list(self.groups)
        wanted = list(names)
        for n in wanted:
            self.group(n)
        return [g for g in self.groups if g.name in wanted]


# ------------------------------------------------------------------------------------------------ parsing

_HEADING_RE = re.compile(r"^(%s):\s?(.*)$" % "|".join(HEADINGS))


def parse_declaration(doc: str | None, where: str) -> Declaration:
    """The six headings of a module docstring (missing ones raise :class:`RulebookError`)."""
    if not doc or not doc.strip():
        raise RulebookError(f"rulebook has no module docstring; it must declare {', '.join(h + ':' for h in HEADINGS)}",
                            where)
    text = inspect.cleandoc(doc)
    sections: dict[str, list[str]] = {}
    summary: list[str] = []
    current: list[str] = summary
    for line in text.splitlines():
        m = _HEADING_RE.match(line)
        if m:
            if m.group(1) in sections:
                raise RulebookError(f"heading {m.group(1)}: appears twice in the declaration", where)
            current = sections.setdefault(m.group(1), [])
            if m.group(2).strip():
                current.append(m.group(2).strip())
            continue
        current.append(line.strip())
    missing = [h for h in HEADINGS if h not in sections]
    if missing:
        raise RulebookError(f"the declaration lacks heading(s) {', '.join(h + ':' for h in missing)} "
                            f"(every group declares {', '.join(h + ':' for h in HEADINGS)}; SPEC PASS-1)", where)
    empty = [h for h in HEADINGS if not " ".join(sections[h]).strip()]
    if empty:
        raise RulebookError(f"heading(s) {', '.join(h + ':' for h in empty)} are empty", where)

    def para(lines: list[str]) -> str:
        return re.sub(r"\s+", " ", " ".join(lines)).strip()

    return Declaration(para(summary), *(para(sections[h]) for h in HEADINGS))


# ------------------------------------------------------------------------------------------------ loading

_ROOT = Path(__file__).resolve().parents[2]
_CACHE: dict[tuple, Registry] = {}
_PATH_MODULES: dict[str, ModuleType] = {}


def _rel(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(_ROOT))
    except ValueError:
        return path


def rulebooks_dir() -> Path:
    """The ``rulebooks`` package directory."""
    import rulebooks
    return Path(rulebooks.__file__).resolve().parent


def _module_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.py") if not p.name.startswith("_"))


def _import_path(path: Path) -> ModuleType:
    key = str(path.resolve())
    mod = _PATH_MODULES.get(key)
    if mod is not None:
        return mod
    digest = hashlib.sha1(key.encode()).hexdigest()[:8]
    modname = f"_intent_rulebook_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise RulebookError("cannot import rulebook", str(path))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    try:
        spec.loader.exec_module(mod)
    except IntentError:
        sys.modules.pop(modname, None)
        raise
    except Exception as err:
        sys.modules.pop(modname, None)
        raise RulebookError(f"rulebook fails to import: {type(err).__name__}: {err}", _rel(str(path))) from err
    _PATH_MODULES[key] = mod
    return mod


def _import_name(name: str) -> ModuleType:
    where = name
    if name.startswith("rulebooks.") and name.count(".") == 1:
        where = _rel(str(rulebooks_dir() / f"{name.split('.', 1)[1]}.py"))
    try:
        return importlib.import_module(name)
    except IntentError:
        raise
    except ModuleNotFoundError as err:
        if err.name == name or (err.name and name.startswith(err.name + ".")):
            raise UnknownRulebook(f"no rulebook module {name!r}") from None
        raise RulebookError(f"rulebook fails to import: {err}", where) from err
    except Exception as err:
        raise RulebookError(f"rulebook fails to import: {type(err).__name__}: {err}", where) from err


def _import_file(path: Path) -> ModuleType:
    """A rulebook file; one of the built-in ``rulebooks/`` is imported as its package module, so naming the
    built-in directory (or a file in it) beside the defaults never registers its rules twice (egglog refuses a
    second definition of a name: "Shadowing is not allowed")."""
    if path.resolve().parent == rulebooks_dir():
        return _import_name(f"rulebooks.{path.stem}")
    return _import_path(path)


def _resolve(items: Any) -> list[ModuleType]:
    """Modules for ``rulebooks``: None (every module of ``rulebooks/``), or a list (or comma-separated string) of
    modules, module names (``rulebooks.blocking``), group names (``blocking``), ``.py`` paths or directories;
    the name ``builtin`` stands for every module of ``rulebooks/``, so ``builtin,mine.py`` loads an extra rulebook
    beside the built-in ones (issue 24 item 7)."""
    if items is None:
        return [_import_name(f"rulebooks.{p.stem}") for p in _module_files(rulebooks_dir())]
    if isinstance(items, (str, os.PathLike, ModuleType)):
        items = [items]
    out: list[ModuleType] = []
    for item in items:
        if isinstance(item, ModuleType):
            out.append(item)
            continue
        text = os.fspath(item)
        if isinstance(item, str) and "," in text:
            out.extend(_resolve([s.strip() for s in text.split(",") if s.strip()]))
            continue
        if text == "builtin":
            out.extend(_resolve(None))
            continue
        path = Path(text)
        if text.endswith(".py") or os.sep in text or path.is_dir():
            if path.is_dir():
                out.extend(_import_file(p) for p in _module_files(path))
            elif path.is_file():
                out.append(_import_file(path))
            else:
                raise UnknownRulebook(f"no rulebook file or directory {text!r}")
            continue
        if "." in text:
            out.append(_import_name(text))
        else:
            candidate = rulebooks_dir() / f"{text}.py"
            if not candidate.is_file():
                known = ", ".join(p.stem for p in _module_files(rulebooks_dir()))
                raise UnknownRulebook(f"no rulebook {text!r} (known: {known or 'none'})")
            out.append(_import_name(f"rulebooks.{text}"))
    seen: set[int] = set()
    uniq = []
    for m in out:
        if id(m) not in seen:
            seen.add(id(m))
            uniq.append(m)
    return uniq


def _source(mod: ModuleType) -> bytes:
    path = getattr(mod, "__file__", None)
    if path and os.path.isfile(path):
        return Path(path).read_bytes()
    try:
        return inspect.getsource(mod).encode()
    except (OSError, TypeError):
        return repr(mod).encode()


def _find_line(source: str, name: str, short: str) -> int | None:
    for needle in (f'"{name}"', f"'{name}'", f'"{short}"', f"'{short}'", f".{short}\"", short):
        idx = source.find(needle)
        if idx >= 0:
            return source.count("\n", 0, idx) + 1
    return None


def _ruleset_decls(rs: Ruleset) -> list[Any]:
    rs._update_egg_decls()          # flush rules registered through generator functions
    return rs.__egg_ruleset__.rules


_GROUPS: dict[int, tuple[ModuleType, Group]] = {}


def _load_group(mod: ModuleType) -> Group:
    """The checked group of a rulebook module (``rules()`` runs once per module and process)."""
    hit = _GROUPS.get(id(mod))
    if hit is not None and hit[0] is mod:
        return hit[1]
    group = _check_group(mod)
    _GROUPS[id(mod)] = (mod, group)
    return group


def _check_group(mod: ModuleType) -> Group:
    path = _rel(getattr(mod, "__file__", None) or mod.__name__)
    key = mod.__name__.rsplit(".", 1)[-1]
    if key.startswith("_intent_rulebook_"):
        key = Path(mod.__file__).stem          # type: ignore[arg-type]
    where = path
    declaration = parse_declaration(mod.__doc__, where)
    group = getattr(mod, "GROUP", None)
    if not isinstance(group, str) or not group:
        raise RulebookError("the rulebook defines no GROUP = \"<name>\"", where)
    if group != key:
        raise RulebookError(f"GROUP = {group!r} but the registry key (the module name) is {key!r}; they must be "
                            f"equal", where)
    order = getattr(mod, "ORDER", None)
    if not isinstance(order, int) or isinstance(order, bool):
        raise RulebookError(f"group {group}: ORDER must be an int (PASS-3 position), got {order!r}", where)
    rs = getattr(mod, "RULESET", None)
    if not isinstance(rs, Ruleset):
        raise RulebookError(f"group {group}: RULESET must be an egglog ruleset, got {type(rs).__name__}", where)
    schedule = getattr(mod, "SCHEDULE", "saturate")
    if schedule not in SCHEDULES:
        raise RulebookError(f"group {group}: SCHEDULE must be one of {', '.join(SCHEDULES)}, got {schedule!r}",
                            where)
    analyses = tuple(getattr(mod, "ANALYSES", ()) or ())
    for a in analyses:
        if not isinstance(a, Ruleset):
            raise RulebookError(f"group {group}: ANALYSES must hold egglog rulesets, got {type(a).__name__}", where)
    seed = getattr(mod, "seed", None)
    if seed is not None and not callable(seed):
        raise RulebookError(f"group {group}: seed must be a function seed(graph) -> None", where)
    fn = getattr(mod, "rules", None)
    if not callable(fn):
        raise RulebookError(f"group {group}: the rulebook defines no rules() function", where)
    source = _source(mod).decode("utf-8", "replace")
    rules: list[Rule] = []
    names: set[str] = set()
    try:
        items = list(fn())
    except IntentError:
        raise
    except Exception as err:
        raise RulebookError(f"group {group}: rules() fails: {type(err).__name__}: {err}", where) from err
    for i, item in enumerate(items):
        if isinstance(item, Rule):
            r = item
        elif isinstance(item, (tuple, list)) and len(item) in (2, 3, 4):
            name, egg = item[0], item[1]
            law = item[2] if len(item) > 2 else ""
            loc = item[3] if len(item) > 3 else ""
            r = Rule(str(name), egg, str(law or ""), str(loc or ""))
        else:
            raise RulebookError(f"group {group}: rules() item #{i} is neither a Rule nor (name, rule, law[, loc])",
                                where)
        if not isinstance(r.name, str) or not r.name.startswith(group + ".") or r.name == group + ".":
            raise RulebookError(f"rule {r.name!r} does not belong to its group: names are '{group}.<short_name>'",
                                where)
        if r.name in names:
            raise RulebookError(f"rule name {r.name!r} is used twice", where)
        if not hasattr(r.egg, "decl"):
            raise RulebookError(f"rule {r.name}: {type(r.egg).__name__} is not an egglog rewrite/rule", where)
        if not r.location:
            line = _find_line(source, r.name, r.short_name)
            r = Rule(r.name, r.egg, r.law, f"{path}:{line}" if line else path)
        names.add(r.name)
        rules.append(r)
    decls = _ruleset_decls(rs)
    for r in rules:
        if r.decl not in decls:
            rs.append(r.egg)
    decls = _ruleset_decls(rs)
    known = {r.decl for r in rules}
    unnamed = [d for d in decls if d not in known]
    if unnamed:
        raise RulebookError(f"group {group}: RULESET holds {len(unnamed)} rule(s) that rules() does not name "
                            f"(every rule needs a '{group}.<name>' entry)", where)
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    return Group(group, order, mod, path, declaration, rs, tuple(rules), schedule, analyses, digest, seed)


def load(rulebooks: Any = None, *, refresh: bool = False) -> Registry:
    """Load and check the transformation groups (see the module docstring for ``rulebooks``)."""
    mods = _resolve(rulebooks)
    key = tuple(id(m) for m in mods)
    if not refresh and key in _CACHE:
        return _CACHE[key]
    groups = [_load_group(m) for m in mods]
    seen: dict[str, str] = {}
    for g in groups:
        if g.name in seen:
            raise RulebookError(f"two rulebooks declare group {g.name!r} ({seen[g.name]} and {g.path})", g.path)
        seen[g.name] = g.path
    rule_names: dict[str, str] = {}
    for g in groups:
        for r in g.rules:
            if r.name in rule_names:
                raise RulebookError(f"rule {r.name!r} is declared by two groups", g.path)
            rule_names[r.name] = g.name
    groups.sort(key=lambda g: (g.order, g.name))
    reg = Registry(tuple(groups), _version_of(groups))
    _CACHE[key] = reg
    return reg


def _engine_hash() -> str:
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in _ENGINE_FILES:
        p = here / name
        if p.is_file():
            h.update(name.encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def _version_of(groups: Sequence[Group]) -> str:
    h = hashlib.sha256(_engine_hash().encode())
    for g in sorted(groups, key=lambda g: g.name):      # ORDER is in the source; same fold as versions(None)
        h.update(f"{g.name}:{g.source_hash}".encode())
    return h.hexdigest()[:12]


def version(rulebooks: Any = None) -> str:
    """A short hash of the loaded rulebooks' sources and the rules engine (sorts, encode/decode, patterns, facts,
    scheduler): equal versions give equal optimizer output for equal input (cache keys)."""
    return load(rulebooks).version


def versions(rulebooks: Any = None) -> dict[str, str]:
    """Per group source hash plus ``"all"`` (= :func:`version`). With ``rulebooks=None`` the files of ``rulebooks/``
    are hashed without importing them (cache keys stay computable while a rulebook is broken)."""
    if rulebooks is None:
        files = _module_files(rulebooks_dir())
        out = {p.stem: hashlib.sha256(p.read_bytes().decode("utf-8", "replace").encode()).hexdigest()[:12]
               for p in files}
        h = hashlib.sha256(_engine_hash().encode())
        for p in sorted(files, key=lambda p: p.stem):       # the same fold as _version_of
            h.update(f"{p.stem}:{out[p.stem]}".encode())
        out["all"] = h.hexdigest()[:12]
        return out
    reg = load(rulebooks)
    out = {g.name: g.source_hash for g in reg.groups}
    out["all"] = reg.version
    return out


__all__ = ["HEADINGS", "SCHEDULES", "PASS3_ORDER", "RulebookError", "Declaration", "Rule", "rule", "Group",
           "Registry", "parse_declaration", "load", "version", "versions", "rulebooks_dir"]
