"""egglog sorts of the shared GPU IR (the search space; DESIGN "How the e-graph should see a program").

The Python GPU IR is the executable authority; these sorts are its term encoding. Every constructor has a pinned
egglog name (``egg_fn``) because the extractor reads the e-graph back through its JSON export by those names.

- ``LE`` / ``LEs``: LaunchExprs (extents, tile sizes are i64 literals inside them, DESIGN).
- ``Ty`` / ``Tys``: value types.
- ``A`` / ``As`` / ``AMap``: attribute values and sorted attribute maps (floats are kept as their exact text).
- ``Val`` / ``Vals``: SSA values as a DAG of pure ops. ``Val.arg(depth, index, ty)`` is argument ``index`` of the
  enclosing region at nesting ``depth`` (the kernel body is depth 0); ``Val.op`` is any pure single-result op;
  ``Val.res`` the i-th result of a pure multi-result/region op (``Multi``); ``Val.sres`` the i-th result of an
  effectful op (``Stmt``).
- ``Stmt`` / ``Stmts``: effectful ops in program order; ``seq`` is the op's position in the original kernel (new
  effects made by rules get fresh ``seq``), so two equal-looking effects never merge.
- ``Region`` / ``Regions``: region depth, argument types, effects, yielded values, the yield's attributes.
- ``KernelT``: a kernel's program space and body (the ABI stays with the Python kernel: rules never change it).

Lists are cons lists (egglog cannot pattern-match inside ``Vec``).
"""
from __future__ import annotations

from egglog import Expr, String, StringLike, i64, i64Like, method


class LE(Expr, egg_sort="IeLE"):
    """A LaunchExpr (SPEC IR-3.1)."""

    @method(egg_fn="LeInt")
    @classmethod
    def int_(cls, v: i64Like) -> LE: ...

    @method(egg_fn="LeBool")
    @classmethod
    def bool_(cls, v: i64Like) -> LE: ...

    @method(egg_fn="LeSym")
    @classmethod
    def sym(cls, name: StringLike) -> LE: ...

    @method(egg_fn="LeDim")
    @classmethod
    def dim(cls, view: StringLike, axis: i64Like) -> LE: ...

    @method(egg_fn="LeStride")
    @classmethod
    def stride(cls, view: StringLike, axis: i64Like) -> LE: ...

    @method(egg_fn="LeBin")
    @classmethod
    def bin(cls, op: StringLike, a: LE, b: LE) -> LE: ...

    @method(egg_fn="LeNot")
    @classmethod
    def not_(cls, a: LE) -> LE: ...

    @method(egg_fn="LeSelect")
    @classmethod
    def select(cls, c: LE, a: LE, b: LE) -> LE: ...

    @method(egg_fn="LeTuple")
    @classmethod
    def tuple_(cls, items: LEs) -> LE: ...

    @method(egg_fn="LeGet")
    @classmethod
    def get(cls, t: LE, index: i64Like) -> LE: ...

    @method(egg_fn="LeNone")
    @classmethod
    def none(cls) -> LE: ...


class LEs(Expr, egg_sort="IeLEs"):
    @method(egg_fn="LEsNil")
    @classmethod
    def nil(cls) -> LEs: ...

    @method(egg_fn="LEsCons")
    @classmethod
    def cons(cls, head: LE, tail: LEs) -> LEs: ...


class Strs(Expr, egg_sort="IeStrs"):
    @method(egg_fn="StrsNil")
    @classmethod
    def nil(cls) -> Strs: ...

    @method(egg_fn="StrsCons")
    @classmethod
    def cons(cls, head: StringLike, tail: Strs) -> Strs: ...


class Ty(Expr, egg_sort="IeTy"):
    @method(egg_fn="TyScalar")
    @classmethod
    def scalar(cls, dtype: StringLike) -> Ty: ...

    @method(egg_fn="TyFrag")
    @classmethod
    def frag(cls, dtype: StringLike, shape: LEs) -> Ty: ...

    @method(egg_fn="TyFragAxes")
    @classmethod
    def frag_axes(cls, dtype: StringLike, shape: LEs, axes: Strs) -> Ty: ...

    @method(egg_fn="TyView")
    @classmethod
    def view(cls, dtype: StringLike, shape: LEs) -> Ty: ...

    @method(egg_fn="TyBuffer")
    @classmethod
    def buffer(cls, dtype: StringLike, shape: LEs, scope: StringLike) -> Ty: ...

    @method(egg_fn="TyTuple")
    @classmethod
    def tuple_(cls, items: Tys) -> Ty: ...


class Tys(Expr, egg_sort="IeTys"):
    @method(egg_fn="TysNil")
    @classmethod
    def nil(cls) -> Tys: ...

    @method(egg_fn="TysCons")
    @classmethod
    def cons(cls, head: Ty, tail: Tys) -> Tys: ...


class A(Expr, egg_sort="IeA"):
    """An attribute value."""

    @method(egg_fn="AInt")
    @classmethod
    def int_(cls, v: i64Like) -> A: ...

    @method(egg_fn="AFloat")
    @classmethod
    def float_(cls, text: StringLike) -> A: ...

    @method(egg_fn="ABool")
    @classmethod
    def bool_(cls, v: i64Like) -> A: ...

    @method(egg_fn="AStr")
    @classmethod
    def str_(cls, v: StringLike) -> A: ...

    @method(egg_fn="ALe")
    @classmethod
    def le(cls, v: LE) -> A: ...

    @method(egg_fn="AList")
    @classmethod
    def list_(cls, items: As) -> A: ...

    @method(egg_fn="ADict")
    @classmethod
    def dict_(cls, items: AMap) -> A: ...


class As(Expr, egg_sort="IeAs"):
    @method(egg_fn="AsNil")
    @classmethod
    def nil(cls) -> As: ...

    @method(egg_fn="AsCons")
    @classmethod
    def cons(cls, head: A, tail: As) -> As: ...


class AMap(Expr, egg_sort="IeAMap"):
    @method(egg_fn="AMapNil")
    @classmethod
    def nil(cls) -> AMap: ...

    @method(egg_fn="AMapCons")
    @classmethod
    def cons(cls, key: StringLike, value: A, tail: AMap) -> AMap: ...


class Val(Expr, egg_sort="IeVal"):
    """An SSA value."""

    @method(egg_fn="Arg")
    @classmethod
    def arg(cls, depth: i64Like, index: i64Like, ty: Ty) -> Val: ...

    @method(egg_fn="Op")
    @classmethod
    def op(cls, name: StringLike, operands: Vals, attrs: AMap, ty: Ty) -> Val: ...

    @method(egg_fn="Res")
    @classmethod
    def res(cls, multi: Multi, index: i64Like, ty: Ty) -> Val: ...

    @method(egg_fn="SRes")
    @classmethod
    def sres(cls, stmt: Stmt, index: i64Like, ty: Ty) -> Val: ...


class Vals(Expr, egg_sort="IeVals"):
    @method(egg_fn="ValsNil")
    @classmethod
    def nil(cls) -> Vals: ...

    @method(egg_fn="ValsCons")
    @classmethod
    def cons(cls, head: Val, tail: Vals) -> Vals: ...


class Multi(Expr, egg_sort="IeMulti"):
    """A pure op with several results or with regions (reduce with a combiner, a pure loop, region_fold...)."""

    @method(egg_fn="Multi")
    @classmethod
    def op(cls, name: StringLike, operands: Vals, attrs: AMap, types: Tys, regions: Regions) -> Multi: ...


class Stmt(Expr, egg_sort="IeStmt"):
    """An op with effects (or whose regions have effects), in program order."""

    @method(egg_fn="Stmt")
    @classmethod
    def op(cls, seq: i64Like, name: StringLike, operands: Vals, attrs: AMap, types: Tys,
           regions: Regions) -> Stmt: ...


class Stmts(Expr, egg_sort="IeStmts"):
    @method(egg_fn="StmtsNil")
    @classmethod
    def nil(cls) -> Stmts: ...

    @method(egg_fn="StmtsCons")
    @classmethod
    def cons(cls, head: Stmt, tail: Stmts) -> Stmts: ...


class Region(Expr, egg_sort="IeRegion"):
    @method(egg_fn="Region")
    @classmethod
    def make(cls, depth: i64Like, args: Tys, stmts: Stmts, yields: Vals, yield_attrs: AMap) -> Region: ...


class Regions(Expr, egg_sort="IeRegions"):
    @method(egg_fn="RegionsNil")
    @classmethod
    def nil(cls) -> Regions: ...

    @method(egg_fn="RegionsCons")
    @classmethod
    def cons(cls, head: Region, tail: Regions) -> Regions: ...


class Seg(Expr, egg_sort="IeSeg"):
    @method(egg_fn="Seg")
    @classmethod
    def make(cls, extents: LEs, order: StringLike, group: LE) -> Seg: ...


class Segs(Expr, egg_sort="IeSegs"):
    @method(egg_fn="SegsNil")
    @classmethod
    def nil(cls) -> Segs: ...

    @method(egg_fn="SegsCons")
    @classmethod
    def cons(cls, head: Seg, tail: Segs) -> Segs: ...


class KernelT(Expr, egg_sort="IeKernelT"):
    """A kernel's program space and body (one launch)."""

    @method(egg_fn="Kernel")
    @classmethod
    def make(cls, name: StringLike, segs: Segs, launch: LE, body: Region) -> KernelT: ...


# The constructors the JSON reader understands: egg name -> (result sort, argument kinds).
# Kinds: "i64", "str", or a sort name.
SIGNATURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "LeInt": ("LE", ("i64",)), "LeBool": ("LE", ("i64",)), "LeSym": ("LE", ("str",)),
    "LeDim": ("LE", ("str", "i64")), "LeStride": ("LE", ("str", "i64")), "LeBin": ("LE", ("str", "LE", "LE")),
    "LeNot": ("LE", ("LE",)), "LeSelect": ("LE", ("LE", "LE", "LE")), "LeTuple": ("LE", ("LEs",)),
    "LeGet": ("LE", ("LE", "i64")), "LeNone": ("LE", ()),
    "LEsNil": ("LEs", ()), "LEsCons": ("LEs", ("LE", "LEs")),
    "StrsNil": ("Strs", ()), "StrsCons": ("Strs", ("str", "Strs")),
    "TyScalar": ("Ty", ("str",)), "TyFrag": ("Ty", ("str", "LEs")), "TyFragAxes": ("Ty", ("str", "LEs", "Strs")),
    "TyView": ("Ty", ("str", "LEs")), "TyBuffer": ("Ty", ("str", "LEs", "str")), "TyTuple": ("Ty", ("Tys",)),
    "TysNil": ("Tys", ()), "TysCons": ("Tys", ("Ty", "Tys")),
    "AInt": ("A", ("i64",)), "AFloat": ("A", ("str",)), "ABool": ("A", ("i64",)), "AStr": ("A", ("str",)),
    "ALe": ("A", ("LE",)), "AList": ("A", ("As",)), "ADict": ("A", ("AMap",)),
    "AsNil": ("As", ()), "AsCons": ("As", ("A", "As")),
    "AMapNil": ("AMap", ()), "AMapCons": ("AMap", ("str", "A", "AMap")),
    "Arg": ("Val", ("i64", "i64", "Ty")), "Op": ("Val", ("str", "Vals", "AMap", "Ty")),
    "Res": ("Val", ("Multi", "i64", "Ty")), "SRes": ("Val", ("Stmt", "i64", "Ty")),
    "ValsNil": ("Vals", ()), "ValsCons": ("Vals", ("Val", "Vals")),
    "Multi": ("Multi", ("str", "Vals", "AMap", "Tys", "Regions")),
    "Stmt": ("Stmt", ("i64", "str", "Vals", "AMap", "Tys", "Regions")),
    "StmtsNil": ("Stmts", ()), "StmtsCons": ("Stmts", ("Stmt", "Stmts")),
    "Region": ("Region", ("i64", "Tys", "Stmts", "Vals", "AMap")),
    "RegionsNil": ("Regions", ()), "RegionsCons": ("Regions", ("Region", "Regions")),
    "Seg": ("Seg", ("LEs", "str", "LE")), "SegsNil": ("Segs", ()), "SegsCons": ("Segs", ("Seg", "Segs")),
    "Kernel": ("KernelT", ("str", "Segs", "LE", "Region")),
}

#: the Python class and classmethod of each egglog constructor
CONSTRUCTORS = {
    "LeInt": LE.int_, "LeBool": LE.bool_, "LeSym": LE.sym, "LeDim": LE.dim, "LeStride": LE.stride, "LeBin": LE.bin,
    "LeNot": LE.not_, "LeSelect": LE.select, "LeTuple": LE.tuple_, "LeGet": LE.get, "LeNone": LE.none,
    "LEsNil": LEs.nil, "LEsCons": LEs.cons, "StrsNil": Strs.nil, "StrsCons": Strs.cons,
    "TyScalar": Ty.scalar, "TyFrag": Ty.frag, "TyFragAxes": Ty.frag_axes, "TyView": Ty.view,
    "TyBuffer": Ty.buffer, "TyTuple": Ty.tuple_, "TysNil": Tys.nil, "TysCons": Tys.cons,
    "AInt": A.int_, "AFloat": A.float_, "ABool": A.bool_, "AStr": A.str_, "ALe": A.le, "AList": A.list_,
    "ADict": A.dict_, "AsNil": As.nil, "AsCons": As.cons, "AMapNil": AMap.nil, "AMapCons": AMap.cons,
    "Arg": Val.arg, "Op": Val.op, "Res": Val.res, "SRes": Val.sres, "ValsNil": Vals.nil, "ValsCons": Vals.cons,
    "Multi": Multi.op, "Stmt": Stmt.op, "StmtsNil": Stmts.nil, "StmtsCons": Stmts.cons, "Region": Region.make,
    "RegionsNil": Regions.nil, "RegionsCons": Regions.cons, "Seg": Seg.make, "SegsNil": Segs.nil,
    "SegsCons": Segs.cons, "Kernel": KernelT.make,
}

__all__ = ["LE", "LEs", "Strs", "Ty", "Tys", "A", "As", "AMap", "Val", "Vals", "Multi", "Stmt", "Stmts", "Region",
           "Regions", "Seg", "Segs", "KernelT", "SIGNATURES", "CONSTRUCTORS", "String", "i64"]
