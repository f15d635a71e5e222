"""Target-capability objects (SPEC TGT-1, TGT-2): typed hardware features that passes and the cost model query.

A :class:`Target` describes one piece of hardware (an NVIDIA SM generation or an AMD gfx ISA), independent of the
source provider (Triton, cuTile): provider and hardware are orthogonal (TGT-1). Passes ask *features*
(``target.supports_atomic("add", "bf16")``, ``target.smem_per_block``, ``target.peak.tensor("f16")``), never names.

Numbers are vendor datasheet values for the named product (dense tensor rates, boost clocks); sources are the
NVIDIA A100/H100/H200/B200/RTX 5090 and AMD MI300X datasheets and the CUDA/HIP programming guides' per-compute-
capability limits. Where a number is an estimate it says so in a comment. Rates are per second for the whole
device; a "flop" is one multiply or one add (so an FMA is 2 flops).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from intent_eqsat.providers.errors import UnknownTargetError

KiB = 1024
MiB = 1024 * KiB
GB = 10 ** 9

ALL_INT = ("i8", "i16", "i32", "i64", "index", "u8", "u16", "u32", "u64")
ALL_FLOAT = ("f16", "bf16", "f32", "f64")
ATOMIC_KINDS = ("add", "max", "min", "and", "or", "xor", "xchg", "cas")
SCOPES = ("cta", "gpu", "sys")
PROVIDERS = ("triton", "cutile")


@dataclass(frozen=True)
class PeakRates:
    """Dense peak rates of the whole device per second.

    ``tensor_*`` are matrix-unit rates by operand dtype (``tf32`` = f32 operands at tf32 precision), 0 where the
    unit does not take that dtype. ``fma_f32``/``fma_f64`` are the vector (non-matrix) FMA rates in flops; ``sfu``
    is the rate of f32 special-function ops (ex2, lg2, rsqrt, sin, cos) in results per second.
    """

    tensor_f16: float
    tensor_bf16: float
    tensor_tf32: float
    tensor_f8: float
    tensor_i8: float
    tensor_f64: float
    fma_f32: float
    fma_f64: float
    sfu: float

    def tensor(self, operand_dtype: str, precision: str = "ieee") -> float:
        """Matrix-unit rate for a contract with these operands; 0 when the unit does not take them."""
        if operand_dtype == "f32":
            # bf16x3: three bf16 products per f32 product (hi*hi + hi*lo + lo*hi) on the bf16 unit
            return {"tf32": self.tensor_tf32, "bf16x3": self.tensor_bf16 / 3.0}.get(precision, 0.0)
        return {"f16": self.tensor_f16, "bf16": self.tensor_bf16, "f8e4m3": self.tensor_f8,
                "f8e5m2": self.tensor_f8, "i8": self.tensor_i8, "u8": self.tensor_i8,
                "f64": self.tensor_f64}.get(operand_dtype, 0.0)


@dataclass(frozen=True)
class AtomicSupport:
    """One atomic kind and the element dtypes the hardware performs it on natively."""

    kind: str
    dtypes: frozenset[str]


@dataclass(frozen=True)
class ContractForm:
    """Operand dtype the matrix unit takes and the accumulator dtypes it produces."""

    operand: str
    accumulators: frozenset[str]


@dataclass(frozen=True)
class Target:
    """Typed capabilities of one hardware target (SPEC TGT-2).

    Grid and block limits, warp/wave size, per-SM and per-block resources, dtypes, the matrix unit's contract forms,
    atomics, which source providers can target it, memory system and peak rates.
    """

    name: str
    vendor: str                                 # "nvidia" | "amd"
    arch: str                                   # "sm_90", "gfx942"
    product: str
    # -- execution model ----------------------------------------------------------------------------------
    warp_size: int
    max_threads_per_block: int
    max_grid: tuple[int, int, int]              # programs per grid axis
    max_grid_rank: int
    sm_count: int                               # SMs (NVIDIA) or CUs (AMD)
    # -- resources ----------------------------------------------------------------------------------------
    registers_per_sm: int                       # 32-bit registers
    registers_per_block: int
    max_registers_per_thread: int
    smem_per_sm: int                            # bytes of shared memory / LDS
    smem_per_block: int
    l2_bytes: int
    tmem_per_sm: int = 0                        # Blackwell tensor memory
    # -- dtypes and structured primitives -----------------------------------------------------------------
    fragment_dtypes: frozenset[str] = frozenset(("i1",) + ALL_INT + ALL_FLOAT)
    contract_forms: tuple[ContractForm, ...] = ()
    contract_precisions: frozenset[str] = frozenset(("ieee",))
    matrix_unit: str = ""                       # descriptive only: mma_sync | wgmma | tcgen05 | mfma
    matrix_unit_warps: int = 1                  # warps that issue one matrix instruction together (wgmma: 4)
    # -- atomics --------------------------------------------------------------------------------------------
    atomics: tuple[AtomicSupport, ...] = ()
    atomic_scopes: frozenset[str] = frozenset(SCOPES)
    # -- providers ------------------------------------------------------------------------------------------
    providers: frozenset[str] = frozenset(("triton",))
    triton_backend: str = "cuda"                # GPUTarget backend
    triton_arch: int | str = 90                 # GPUTarget arch
    cutile_arch: str | None = None              # cuda.tile gpu_code ("sm_90")
    cutile_min_tileiras: str | None = None      # oldest tileiras that compiles for this arch
    # -- memory and rates -----------------------------------------------------------------------------------
    memory_bytes: int = 0
    memory_bandwidth: float = 0.0               # bytes / s
    clock_hz: float = 0.0                       # boost clock
    peak: PeakRates = field(default_factory=lambda: PeakRates(0, 0, 0, 0, 0, 0, 0, 0, 0))

    # -- queries --------------------------------------------------------------------------------------------
    def supports_dtype(self, dtype: str) -> bool:
        return dtype in self.fragment_dtypes

    def supports_atomic(self, kind: str, dtype: str, scope: str | None = None) -> bool:
        if scope is not None and scope not in self.atomic_scopes:
            return False
        dtype = "i64" if dtype == "index" else dtype
        return any(a.kind == kind and dtype in a.dtypes for a in self.atomics)

    def atomic_dtypes(self, kind: str) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for a in self.atomics:
            if a.kind == kind:
                out = out | a.dtypes
        return out

    def supports_contract(self, operand: str, accumulator: str, precision: str = "ieee") -> bool:
        """True when the matrix unit takes ``operand`` inputs into an ``accumulator``-typed result."""
        if operand == "f32" and precision not in self.contract_precisions:
            return False
        return any(f.operand == operand and accumulator in f.accumulators for f in self.contract_forms)

    def supports_provider(self, provider: str) -> bool:
        return provider in self.providers

    @property
    def max_warps_per_block(self) -> int:
        return self.max_threads_per_block // self.warp_size

    @property
    def triton_target(self):
        """``triton.backends.compiler.GPUTarget`` for AOT compilation (imports triton lazily)."""
        from triton.backends.compiler import GPUTarget
        return GPUTarget(self.triton_backend, self.triton_arch, self.warp_size)

    def features(self) -> dict:
        """A plain, printable summary (reports and docs)."""
        return {
            "name": self.name, "arch": self.arch, "product": self.product, "warp_size": self.warp_size,
            "sm_count": self.sm_count, "max_grid": self.max_grid, "smem_per_block": self.smem_per_block,
            "registers_per_sm": self.registers_per_sm, "matrix_unit": self.matrix_unit,
            "providers": sorted(self.providers), "memory_bandwidth": self.memory_bandwidth,
            "peak_tensor_bf16": self.peak.tensor_bf16, "peak_fma_f32": self.peak.fma_f32,
        }


def _atomics(**kinds: tuple[str, ...]) -> tuple[AtomicSupport, ...]:
    return tuple(AtomicSupport(k.rstrip("_"), frozenset(v)) for k, v in kinds.items())


def _forms(**forms: tuple[str, ...]) -> tuple[ContractForm, ...]:
    return tuple(ContractForm(k, frozenset(v)) for k, v in forms.items())


_INT32_64 = ("i32", "u32", "i64", "u64")
_NV_GRID = (2 ** 31 - 1, 65535, 65535)

# NVIDIA atomics (PTX ISA): add on 32/64-bit ints, f32, f64 and f16 (sm_70+); bf16 add needs sm_90; integer
# min/max; bitwise and/or/xor and exchange on 32/64-bit; cas on 16 (sm_70+), 32 and 64-bit.
_NV_ATOMICS_SM80 = _atomics(
    add=_INT32_64 + ("f16", "f32", "f64"), max=_INT32_64, min=_INT32_64, and_=_INT32_64, or_=_INT32_64,
    xor=_INT32_64, xchg=_INT32_64 + ("f32", "f64"), cas=("i16", "u16", "f16", "bf16") + _INT32_64 + ("f32", "f64"))
_NV_ATOMICS_SM90 = _atomics(
    add=_INT32_64 + ("f16", "bf16", "f32", "f64"), max=_INT32_64, min=_INT32_64, and_=_INT32_64, or_=_INT32_64,
    xor=_INT32_64, xchg=_INT32_64 + ("f32", "f64"), cas=("i16", "u16", "f16", "bf16") + _INT32_64 + ("f32", "f64"))

_F32ACC = ("f32",)
SM80 = Target(
    name="sm80", vendor="nvidia", arch="sm_80", product="A100-SXM4-80GB",
    warp_size=32, max_threads_per_block=1024, max_grid=_NV_GRID, max_grid_rank=3, sm_count=108,
    registers_per_sm=65536, registers_per_block=65536, max_registers_per_thread=255,
    smem_per_sm=164 * KiB, smem_per_block=163 * KiB, l2_bytes=40 * MiB,
    contract_forms=_forms(f16=("f16", "f32"), bf16=_F32ACC, f32=_F32ACC, i8=("i32",), u8=("i32",), f64=("f64",)),
    contract_precisions=frozenset(("ieee", "tf32", "bf16x3")), matrix_unit="mma_sync",
    atomics=_NV_ATOMICS_SM80,
    # cuTile on Ampere: supported by recent tileiras releases; the minimum version is not verified here.
    providers=frozenset(("triton", "cutile")), triton_backend="cuda", triton_arch=80, cutile_arch="sm_80",
    cutile_min_tileiras="13.2",
    memory_bytes=80 * GB, memory_bandwidth=2.039e12, clock_hz=1.41e9,
    peak=PeakRates(tensor_f16=312e12, tensor_bf16=312e12, tensor_tf32=156e12, tensor_f8=0.0, tensor_i8=624e12,
                   tensor_f64=19.5e12, fma_f32=19.5e12, fma_f64=9.7e12, sfu=16 * 108 * 1.41e9),
)

SM90 = Target(
    name="sm90", vendor="nvidia", arch="sm_90", product="H100-SXM5-80GB",
    warp_size=32, max_threads_per_block=1024, max_grid=_NV_GRID, max_grid_rank=3, sm_count=132,
    registers_per_sm=65536, registers_per_block=65536, max_registers_per_thread=255,
    smem_per_sm=228 * KiB, smem_per_block=227 * KiB, l2_bytes=50 * MiB,
    contract_forms=_forms(f16=("f16", "f32"), bf16=_F32ACC, f32=_F32ACC, f8e4m3=("f16", "f32"),
                          f8e5m2=("f16", "f32"), i8=("i32",), u8=("i32",), f64=("f64",)),
    contract_precisions=frozenset(("ieee", "tf32", "bf16x3")), matrix_unit="wgmma", matrix_unit_warps=4,
    atomics=_NV_ATOMICS_SM90,
    # cuTile reaches Hopper with tileiras 13.3 (DESIGN.md).
    providers=frozenset(("triton", "cutile")), triton_backend="cuda", triton_arch=90, cutile_arch="sm_90",
    cutile_min_tileiras="13.3",
    memory_bytes=80 * GB, memory_bandwidth=3.35e12, clock_hz=1.98e9,
    peak=PeakRates(tensor_f16=989.4e12, tensor_bf16=989.4e12, tensor_tf32=494.7e12, tensor_f8=1978.9e12,
                   tensor_i8=1978.9e12, tensor_f64=66.9e12, fma_f32=66.9e12, fma_f64=33.5e12,
                   sfu=16 * 132 * 1.98e9),
)

#: H200: the sm_90 chip with 141 GB of HBM3e at 4.8 TB/s (same SMs, clocks and rates as H100 SXM).
H200 = replace(SM90, name="h200", product="H200-SXM-141GB", memory_bytes=141 * GB, memory_bandwidth=4.8e12)

SM100 = Target(
    name="sm100", vendor="nvidia", arch="sm_100", product="B200",
    warp_size=32, max_threads_per_block=1024, max_grid=_NV_GRID, max_grid_rank=3, sm_count=148,
    registers_per_sm=65536, registers_per_block=65536, max_registers_per_thread=255,
    smem_per_sm=228 * KiB, smem_per_block=227 * KiB, l2_bytes=126 * MiB, tmem_per_sm=256 * KiB,
    contract_forms=_forms(f16=("f16", "f32"), bf16=_F32ACC, f32=_F32ACC, f8e4m3=("f16", "f32"),
                          f8e5m2=("f16", "f32"), i8=("i32",), u8=("i32",), f64=("f64",)),
    contract_precisions=frozenset(("ieee", "tf32", "bf16x3")), matrix_unit="tcgen05",
    atomics=_NV_ATOMICS_SM90,
    providers=frozenset(("triton", "cutile")), triton_backend="cuda", triton_arch=100, cutile_arch="sm_100",
    cutile_min_tileiras="13.1",
    # clock is an estimate (NVIDIA publishes rates, not the boost clock, for B200)
    memory_bytes=180 * GB, memory_bandwidth=8.0e12, clock_hz=1.965e9,
    peak=PeakRates(tensor_f16=2.25e15, tensor_bf16=2.25e15, tensor_tf32=1.125e15, tensor_f8=4.5e15,
                   tensor_i8=4.5e15, tensor_f64=40e12, fma_f32=80e12, fma_f64=40e12, sfu=16 * 148 * 1.965e9),
)

SM120 = Target(
    name="sm120", vendor="nvidia", arch="sm_120", product="GeForce RTX 5090",
    warp_size=32, max_threads_per_block=1024, max_grid=_NV_GRID, max_grid_rank=3, sm_count=170,
    registers_per_sm=65536, registers_per_block=65536, max_registers_per_thread=255,
    smem_per_sm=100 * KiB, smem_per_block=99 * KiB, l2_bytes=96 * MiB,
    contract_forms=_forms(f16=("f16", "f32"), bf16=_F32ACC, f32=_F32ACC, f8e4m3=("f16", "f32"),
                          f8e5m2=("f16", "f32"), i8=("i32",), u8=("i32",), f64=("f64",)),
    contract_precisions=frozenset(("ieee", "tf32", "bf16x3")), matrix_unit="mma_sync",
    atomics=_NV_ATOMICS_SM90,
    providers=frozenset(("triton", "cutile")), triton_backend="cuda", triton_arch=120, cutile_arch="sm_120",
    cutile_min_tileiras="13.1",
    memory_bytes=32 * GB, memory_bandwidth=1.792e12, clock_hz=2.407e9,
    # GeForce: dense f16/bf16 with f32 accumulation; f64 runs on the (1/64-rate) vector units
    peak=PeakRates(tensor_f16=209.5e12, tensor_bf16=209.5e12, tensor_tf32=104.8e12, tensor_f8=419e12,
                   tensor_i8=838e12, tensor_f64=0.0, fma_f32=104.8e12, fma_f64=1.64e12, sfu=16 * 170 * 2.407e9),
)

# MI300X (CDNA3): 4 SIMDs per CU, 512 32-bit VGPRs (arch + acc) per lane; 64 KiB LDS per CU and per workgroup.
GFX942 = Target(
    name="gfx942", vendor="amd", arch="gfx942", product="Instinct MI300X",
    warp_size=64, max_threads_per_block=1024, max_grid=_NV_GRID, max_grid_rank=3, sm_count=304,
    registers_per_sm=4 * 512 * 64, registers_per_block=4 * 512 * 64, max_registers_per_thread=512,
    smem_per_sm=64 * KiB, smem_per_block=64 * KiB, l2_bytes=32 * MiB,
    contract_forms=_forms(f16=_F32ACC, bf16=_F32ACC, f32=_F32ACC, f8e4m3=_F32ACC, f8e5m2=_F32ACC, i8=("i32",),
                          f64=("f64",)),
    # the matrix cores take xf32 (tf32-like); whether a provider can spell it is the provider's business
    contract_precisions=frozenset(("ieee", "tf32")), matrix_unit="mfma",
    atomics=_atomics(add=_INT32_64 + ("f16", "bf16", "f32", "f64"), max=_INT32_64, min=_INT32_64,
                     and_=_INT32_64, or_=_INT32_64, xor=_INT32_64, xchg=_INT32_64 + ("f32", "f64"),
                     cas=_INT32_64 + ("f32", "f64")),
    providers=frozenset(("triton",)), triton_backend="hip", triton_arch="gfx942", cutile_arch=None,
    memory_bytes=192 * GB, memory_bandwidth=5.3e12, clock_hz=2.1e9,
    # sfu: transcendentals at quarter rate of the 64-lane-per-clock VALU (estimate)
    peak=PeakRates(tensor_f16=1307.4e12, tensor_bf16=1307.4e12, tensor_tf32=653.7e12, tensor_f8=2614.9e12,
                   tensor_i8=2614.9e12, tensor_f64=163.4e12, fma_f32=163.4e12, fma_f64=81.7e12,
                   sfu=304 * 64 * 2.1e9 / 4),
)

TARGETS: dict[str, Target] = {t.name: t for t in (SM80, SM90, H200, SM100, SM120, GFX942)}
_ALIASES = {"sm_80": "sm80", "a100": "sm80", "sm_90": "sm90", "sm_90a": "sm90", "h100": "sm90",
            "sm_100": "sm100", "sm_100a": "sm100", "b200": "sm100", "sm_120": "sm120", "rtx5090": "sm120",
            "mi300x": "gfx942"}


def get_target(name: "str | Target") -> Target:
    """The capability object for a target name (``sm80``, ``sm90``, ``h200``, ``sm100``, ``sm120``, ``gfx942``
    and aliases such as ``sm_90`` or ``h100``); a :class:`Target` passes through. Unknown names raise
    :class:`UnknownTargetError` listing the known ones."""
    if isinstance(name, Target):
        return name
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in TARGETS:
        raise UnknownTargetError(f"unknown target {name!r}; known targets: {', '.join(sorted(TARGETS))} "
                                 f"(aliases: {', '.join(sorted(_ALIASES))})")
    return TARGETS[key]


__all__ = ["Target", "PeakRates", "AtomicSupport", "ContractForm", "TARGETS", "get_target", "SM80", "SM90",
           "H200", "SM100", "SM120", "GFX942", "ATOMIC_KINDS", "SCOPES", "PROVIDERS"]
