"""An op's call as data, and the call made again from it (SPEC §19's memory-bound suite, §23).

    text = encode(torch.ops.aten.native_layer_norm.default, args, kwargs)   # in the profile's census
    fn, moved = replay(text, torch.device("cpu"))                           # in the kernels harness
    fn()                                                                    # the same op, same shapes
    fn.keywords                                                             # the arguments it was given

**The record** (``ops.tsv``'s ``call`` column, one line of JSON): the ATen overload and every argument by its
schema name — a tensor as its shape, dtype and, where it is not contiguous, its strides (``{"t": [64, 16, 28, 28],
"d": "float32", "st": [...]}``; ``"p": 1`` where it is a layer's parameter or a view of one); lists as lists; numbers, flags,
strings and None as themselves; a dtype, memory format or layout by name; a device or generator as null (the replay
runs where it is timed). No value of a tensor is kept: a call is its shapes, strides and arguments, which is what
sets its time.

**The replay** makes each tensor fresh with the recorded shape, dtype and strides (floating values from a normal
distribution), passes the recorded arguments, and calls the same overload. An integer tensor holds indices, so its
values are drawn below the size they index (``INDEX_BOUNDS``: an embedding's rows, a loss's classes, a pooled
plane's positions, the indexed dimension); an op with no rule draws below its smallest floating dimension, so
every index is valid. A boolean tensor is a fair coin (a dropout mask).

**Minimum traffic** (:func:`traffic`, the census's rule): every tensor read plus every tensor written, by their
bytes; a view moves nothing; a gather reads the rows it picks and its indices, not the table.

**Layout** (:func:`layout_of`) names each tensor input's memory order: ``c`` contiguous, ``cl`` channels-last,
``t`` the last two dimensions transposed, ``s`` any other strides, ``-`` not a tensor — what a kernel problem
must be timed in (a channels-last convolution is not the NCHW one).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

GATHERS = {"index", "index_select", "gather", "embedding", "take", "take_along_dim"}
UNDECLARED_VIEWS = {"_unsafe_view"}   # views in effect (they move no byte) though their schema does not say so
MAX_CALL_CHARS = 100_000          # a recorded call longer than this is not a call (within the TSV reader's field limit)
MAX_REPLAY_ELEMENTS = 2**29       # the elements one replayed call may allocate in all (2 GiB of fp32)
LARGE_SCALAR = 2**20              # a whole-number argument this large is a count of elements to make
# Ops that take memory geometry or storage as arguments (a crafted call could read outside a tensor's memory), or
# reach outside the process's tensors: never made again, whatever a file says.
REFUSED = frozenset({"strided", "set", "resize", "unsafe", "storage", "nested", "sparse", "cufft",
                     "moving", "assert", "print", "alias", "linalg", "eig", "svd", "cholesky", "lu", "qr", "solve",
                     "inverse", "det", "logdet", "slogdet", "fft", "stft", "lstsq", "pinv", "file"})
# REFUSED: words of an op's name (``linalg_eig``: linalg, eig); REFUSED_PHRASES: parts of it
REFUSED_PHRASES = ("matrix_exp", "local_scalar", "to_mkldnn", "record_stream")
MAX_DEPTH = 6                     # arguments nest at most this deep (a list of tensors of a tensor spec: 3)
_NAMED = {torch.memory_format: "mf", torch.layout: "layout", torch.dtype: "dtype"}
_DTYPES = {str(d).removeprefix("torch."): d for d in (torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                                       torch.int64, torch.int32, torch.int16, torch.int8,
                                                       torch.uint8, torch.bool)}
_FORMATS = {"torch.contiguous_format": torch.contiguous_format, "torch.channels_last": torch.channels_last,
            "torch.preserve_format": torch.preserve_format, "torch.channels_last_3d": torch.channels_last_3d}


def _tensor_bound(shape_of: Callable[[str], list[int] | None], arg: str, dim: int | None = None) -> int | None:
    shape = shape_of(arg)
    if not shape:
        return None
    if not isinstance(dim, int) or isinstance(dim, bool) or not -len(shape) <= dim < len(shape):
        return None
    return shape[dim]


def _scalar(name: str) -> Callable[[Callable, dict], int | None]:
    return lambda shape_of, args: args.get(name) if isinstance(args.get(name), int) else None


# Per op: the integer argument that indexes, and how far its values may go (from the call's other arguments).
INDEX_BOUNDS: dict[str, tuple[str, Callable[[Callable, dict], int | None]]] = {
    "embedding": ("indices", lambda shape_of, args: _tensor_bound(shape_of, "weight", 0)),
    "embedding_dense_backward": ("indices", _scalar("num_weights")),
    "index_select": ("index", lambda shape_of, args: _tensor_bound(shape_of, "self", args.get("dim", 0))),
    "gather": ("index", lambda shape_of, args: _tensor_bound(shape_of, "self", args.get("dim", 0))),
    "nll_loss_forward": ("target", lambda shape_of, args: _tensor_bound(shape_of, "self", -1 if len(
        shape_of("self") or []) == 1 else 1)),
    "nll_loss_backward": ("target", lambda shape_of, args: _tensor_bound(shape_of, "self", -1 if len(
        shape_of("self") or []) == 1 else 1)),
    "nll_loss2d_forward": ("target", lambda shape_of, args: _tensor_bound(shape_of, "self", 1)),
    "nll_loss2d_backward": ("target", lambda shape_of, args: _tensor_bound(shape_of, "self", 1)),
    "max_pool2d_with_indices_backward": ("indices", lambda shape_of, args: math.prod((shape_of("self") or [1])[-2:])),
}


def _encode_value(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        out: dict[str, Any] = {"t": list(value.shape), "d": str(value.dtype).removeprefix("torch.")}
        if not value.is_contiguous():
            out["st"] = list(value.stride())
        if isinstance(value, torch.nn.Parameter) or isinstance(value._base, torch.nn.Parameter):
            out["p"] = 1               # a layer's weight, or a view of it (a Linear's wᵀ): never the batch's
        return out
    if isinstance(value, (list, tuple)):
        return [_encode_value(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"f": str(value)}
    for kind, key in _NAMED.items():
        if isinstance(value, kind):
            return {key: str(value).removeprefix("torch.") if kind is torch.dtype else str(value)}
    if isinstance(value, (torch.device, torch.Generator)):
        return None
    return {"?": type(value).__name__}


def encode(func: Any, args: tuple, kwargs: dict) -> str:
    """The call as one line of JSON (see the module docstring)."""
    schema = func._schema
    named = {a.name: v for a, v in zip(schema.arguments, args)}
    named.update(kwargs)
    return json.dumps({"op": f"{schema.name}.{schema.overload_name or 'default'}",
                       "args": {k: _encode_value(v) for k, v in named.items()}}, separators=(",", ":"))


def layout_of(value: torch.Tensor) -> str:
    """``c``, ``cl``, ``t`` or ``s`` (see the module docstring)."""
    if value.is_contiguous():
        return "c"
    if value.dim() == 4 and value.is_contiguous(memory_format=torch.channels_last):
        return "cl"
    if value.dim() >= 2 and value.transpose(-1, -2).is_contiguous():
        return "t"
    return "s"


def layouts(args: tuple, kwargs: dict) -> str:
    """Each tensor input's layout, in order (``c, cl, t``)."""
    return ", ".join(layout_of(t) for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor))


def traffic(func: Any, args: tuple, kwargs: dict, out: Any) -> int:
    """Bytes of one call's minimum traffic (see the module docstring)."""
    if getattr(func, "is_view", False) or func._overloadpacket.__name__ in UNDECLARED_VIEWS:
        return 0
    inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
    outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
    if func._overloadpacket.__name__ in GATHERS:   # the rows it picks, not the whole table
        return sum(t.nbytes for t in inputs if not t.is_floating_point()) + 2 * sum(t.nbytes for t in outputs)
    return sum(t.nbytes for t in inputs + outputs)


def with_shapes(text: str, shapes: list[list[int]]) -> str:
    """The call with its tensors' shapes replaced, in order, by ``shapes`` (each tensor kept in its memory order), or
    "" where the counts differ: the same op on a batch of another length (text of another length)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return ""
    tensors = [t for v in doc.get("args", {}).values() for t in tensor_specs(v)]
    if len(tensors) != len(shapes) or any(len(t["t"]) != len(s) for t, s in zip(tensors, shapes)):
        return ""
    for spec, shape in zip(tensors, shapes):
        if "st" in spec:
            spec["st"] = strides_like(spec["st"], shape)
        spec["t"] = list(shape)
    return json.dumps(doc, separators=(",", ":"))


def strides_like(strides: list[int], shape: list[int]) -> list[int]:
    """Dense strides for ``shape`` in the memory order ``strides`` describe (channels-last stays channels-last)."""
    made, step = [0] * len(shape), 1
    for d in sorted(range(len(shape)), key=lambda d: (strides[d], -d)):
        made[d], step = step, step * max(1, shape[d])
    return made


@functools.lru_cache(maxsize=4096)   # looked up once per op and device: parse each call once
def kernel_identity(text: str) -> str:
    """The call as the kernel it runs: its text without the census's parameter marks (``"p"`` says what a dimension is
    to ``--batch``, not what the kernel does), so a profile and a ``kernels.json`` written before or after a mark was
    added find each other's rows."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return text
    if not isinstance(doc, dict) or not isinstance(doc.get("args"), dict):
        return text

    def unmarked(value: Any) -> Any:
        if isinstance(value, dict) and "t" in value:
            return {k: v for k, v in value.items() if k != "p"}
        return [unmarked(v) for v in value] if isinstance(value, list) else value
    return json.dumps({"op": doc.get("op"), "args": {k: unmarked(v) for k, v in doc["args"].items()}},
                      separators=(",", ":"))


def tensor_specs(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict) and "t" in value:
        return [value]
    if isinstance(value, list):
        return [t for v in value for t in tensor_specs(v)]
    return []


# --- the replay ---------------------------------------------------------------------------------------------


def decode(text: str) -> tuple[Any, dict[str, Any]]:
    """The overload and the recorded arguments of a ``call``; a ValueError names what is wrong with it."""
    if not isinstance(text, str) or not text or len(text) > MAX_CALL_CHARS:
        raise ValueError(f"a call is one line of JSON of at most {MAX_CALL_CHARS:,} characters")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON ({err.msg} at character {err.pos})") from None
    except RecursionError:
        raise ValueError(f"nests deeper than any op's arguments (at most {MAX_DEPTH} levels)") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("op"), str) or not isinstance(doc.get("args"), dict):
        raise ValueError('not {"op": "aten::name.overload", "args": {…}}')
    name, _, overload = doc["op"].partition(".")
    namespace, _, base = name.partition("::")
    if namespace != "aten" or not base.isidentifier() or not (overload or "default").isidentifier():
        raise ValueError(f"op {doc['op'][:80]!r} is not an ATen overload (aten::name.overload)")
    if REFUSED & set(base.strip("_").split("_")) or any(phrase in base for phrase in REFUSED_PHRASES):
        raise ValueError(f"op {doc['op'][:80]!r} takes memory geometry or storage as arguments, or is no kernel of a "
                         "training step: not made again")
    try:
        func = getattr(getattr(torch.ops.aten, base), overload or "default")
    except (AttributeError, RuntimeError):
        raise ValueError(f"op {doc['op'][:80]!r}: this PyTorch has no such ATen overload") from None
    if not isinstance(func, torch._ops.OpOverload):
        raise ValueError(f"op {doc['op'][:80]!r} is not an ATen overload (aten::name.overload)")
    names = {a.name for a in func._schema.arguments}
    if getattr(func, "is_view", False) or {"size", "stride"} <= names:
        raise ValueError(f"op {doc['op'][:80]!r} is a view or takes a size and strides (memory geometry): not made "
                         "again — a view moves nothing, and the census records none")
    if _depth(doc["args"]) > MAX_DEPTH:
        raise ValueError(f"its arguments nest deeper than {MAX_DEPTH} levels: no op's do")
    return func, doc["args"]


def _depth(value: Any, level: int = 0) -> int:
    """How deep lists and objects nest (stopped early: a hostile file is not walked to the bottom)."""
    if level > MAX_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level)
    return level


def _elements(value: Any) -> int:
    """Elements a recorded argument makes: a tensor's storage, or what a size list (``empty``'s, ``new_zeros``') asks
    for."""
    if isinstance(value, dict) and "t" in value:
        return _check_tensor(value)
    if isinstance(value, list):
        if value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return math.prod(abs(v) for v in value)
        return sum(_elements(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= LARGE_SCALAR:
        return abs(value)             # a count (``arange``'s end, ``randperm``'s n): as many elements
    return 0


def footprint(text: str) -> int:
    """Bytes the call's tensors hold (their storages), without making them; 0 for a call that cannot be read."""
    try:
        _, recorded = decode(text)
        return sum(_check_tensor(t) * _DTYPES[t["d"]].itemsize for v in recorded.values() for t in tensor_specs(v))
    except ValueError:
        return 0


def _check_tensor(spec: dict[str, Any]) -> int:
    shape, strides = spec.get("t"), spec.get("st")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= 2**31
                                              for d in shape) or len(shape) > 8:
        raise ValueError(f"a tensor's shape {str(shape)[:60]} is not a list of at most 8 sizes from 0 to 2^31")
    if not isinstance(spec.get("d"), str) or spec["d"] not in _DTYPES:
        raise ValueError(f"a tensor's dtype {str(spec.get('d'))[:30]!r} is not one of {', '.join(_DTYPES)}")
    if strides is not None and (not isinstance(strides, list) or len(strides) != len(shape) or not all(
            isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= 2**40 for s in strides)):
        raise ValueError(f"a tensor's strides {str(strides)[:60]} are not one non-negative whole number per dimension")
    if strides is None:
        return math.prod(shape)
    return 1 + sum((d - 1) * s for d, s in zip(shape, strides)) if all(shape) else 0   # the storage it spans


def _make(spec: dict[str, Any], device: torch.device, high: int | None) -> torch.Tensor:
    """A fresh tensor of the recorded shape, dtype and strides: its storage filled (on the meta device there is
    nothing to fill), then viewed with the strides (an expanded tensor's zero strides share elements)."""
    dtype, shape = _DTYPES[spec["d"]], spec["t"]
    strides = spec.get("st") or list(torch.empty(shape, device="meta").stride())
    storage = torch.empty(_check_tensor({**spec, "st": strides}), dtype=dtype, device=device)
    if device.type == "meta":
        pass
    elif dtype.is_floating_point:
        storage.normal_()
    elif dtype == torch.bool:
        storage.copy_(torch.rand(storage.shape, device=device) < 0.5)
    else:
        storage.random_(0, max(1, high or 1))
    return storage.as_strided(shape, strides)


def replay(text: str, device: torch.device) -> tuple[Callable[[], Any], int]:
    """A callable that runs the recorded call once on ``device``, and that call's minimum traffic in bytes. A
    ValueError says why a call cannot be made again (not a call, an unknown op, arguments this op refuses)."""
    func, recorded = decode(text)
    if device.type != "meta":
        _within_budget(recorded)
        out_elements = sum(t.numel() for t in tree_flatten(_call(func, recorded, torch.device("meta"))[0])[0]
                           if isinstance(t, torch.Tensor))
        if out_elements > MAX_REPLAY_ELEMENTS:
            raise ValueError(f"it would write {out_elements:,} elements, more than the {MAX_REPLAY_ELEMENTS:,} a "
                             "replayed call may allocate")
    out, kwargs = _call(func, recorded, device)
    moved = traffic(func, (), kwargs, out)
    return functools.partial(func, **kwargs), moved


def _call(func: Any, recorded: dict[str, Any], device: torch.device) -> tuple[Any, dict[str, Any]]:
    """The recorded call made once on ``device``: its output and the arguments it was given."""

    def shape_of(arg: str) -> list[int] | None:
        value = recorded.get(arg)
        return value["t"] if isinstance(value, dict) and "t" in value else None

    base = func._overloadpacket.__name__
    index_arg, bound = INDEX_BOUNDS.get(base, (None, None))
    try:
        high = bound(shape_of, recorded) if bound else None
    except (TypeError, IndexError, KeyError):
        high = None
    high = high if isinstance(high, int) and not isinstance(high, bool) and high > 0 else None
    floats = _float_dims(recorded)
    default_high = min(floats) if floats else 1

    def make(value: Any, arg: str) -> Any:
        if isinstance(value, dict):
            if "t" in value:
                return _make(value, device, high if arg == index_arg else default_high)
            if "f" in value:
                return float(value["f"])
            if "dtype" in value:
                return _DTYPES.get(str(value["dtype"])) or _refuse(f"dtype {str(value['dtype'])[:40]!r}")
            if "mf" in value:
                return _FORMATS.get(str(value["mf"])) or _refuse(f"memory format {str(value['mf'])[:40]!r}")
            if "layout" in value:
                return torch.strided
            _refuse(f"argument {arg} of a kind not recorded ({str(value)[:60]})")
        if isinstance(value, list):
            return [make(v, arg) for v in value]
        return value

    try:
        kwargs = {arg: make(value, arg) for arg, value in recorded.items()}
        if any(a.name == "device" for a in func._schema.arguments):   # a factory makes its tensor here, not elsewhere
            kwargs["device"] = device
        out = func(**kwargs)
    except (RuntimeError, TypeError, IndexError, OverflowError, NotImplementedError) as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise ValueError(f"{base} refused the recorded arguments: {first[:200]}") from None
    return out, kwargs


def meta_cost(text: str) -> tuple[float, float]:
    """(FLOPs, bytes) of one call, counted on PyTorch's ``meta`` device (shapes only, nothing allocated) — what the
    call will cost, whatever a file claims; (0, 0) for a call that cannot be made."""
    from dawnbench.opcalls.formulas import op_flops

    try:
        func, recorded = decode(text)
        out, kwargs = _call(func, recorded, torch.device("meta"))
        return float(op_flops(func, *positional(func, kwargs), out)), float(traffic(func, (), kwargs, out))
    except (ValueError, RuntimeError, TypeError):
        return 0.0, 0.0


def positional(func: Any, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """A call's arguments by name as the schema's positional ones and its keyword-only ones (what formulas that
    take arguments in order, like torch's FLOP counts, need)."""
    args, rest = [], dict(kwargs)
    for argument in func._schema.arguments:
        if argument.kwarg_only or argument.name not in rest:
            break
        args.append(rest.pop(argument.name))
    return tuple(args), rest


def _float_dims(recorded: dict[str, Any]) -> list[int]:
    """Every dimension of the call's floating tensors (an index with no rule is drawn below the smallest)."""
    return [d for v in recorded.values() for t in tensor_specs(v)
            if isinstance(t.get("d"), str) and _DTYPES.get(t["d"], torch.int64).is_floating_point
            for d in t["t"] if isinstance(d, int) and d > 0]


def _refuse(what: str) -> Any:
    raise ValueError(f"{what}: not something a replay can make")


def _within_budget(recorded: dict[str, Any]) -> None:
    elements = sum(_elements(v) for v in recorded.values())
    if elements > MAX_REPLAY_ELEMENTS:
        raise ValueError(f"its tensors and sizes come to {elements:,} elements, more than the "
                         f"{MAX_REPLAY_ELEMENTS:,} a replayed call may allocate")


def check_call(text: str, allocates: bool = True) -> str | None:
    """Why ``text`` is not a call a replay can make (its form only: nothing is allocated), or None; ``allocates``
    False: a call only counted on the meta device (a census's), which no element budget bounds."""
    try:
        _, recorded = decode(text)
        if allocates:
            _within_budget(recorded)
    except ValueError as err:
        return str(err)
    return None

