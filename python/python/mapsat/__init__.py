"""mapsat from Python: numpy arrays in, numpy arrays out.

A program of mapsat's IR (the text format of ``docs/language.md``) is evaluated by the
interpreter, mapped, emitted as an OpenCL or CUDA kernel, run on a device and tuned, as the
``mapsat`` command line does::

    import numpy as np, mapsat
    p = mapsat.Program.load("examples/matmul.lift")
    a, b = np.random.rand(64, 32), np.random.rand(32, 48)
    want = p.eval(a, b)                                   # sizes from the arrays' shapes
    best = p.tune(a=a, b=b, device="opencl:0:0", trials=16)
    got = p.run(a, b, mapping=best.mapping, local=best.local, sizes=best.sizes).output

Sizes not given (``sizes={"N": 64}``) are read off the inputs' shapes where a dimension is a
size variable, else take the program's defaults. Inputs are given positionally (``eval``,
``run``), by name, or in ``inputs={"x": x}`` (which a parameter named like an option, such as
``seed`` or ``device``, needs). Inputs are converted to the parameter's
scalar type: ``f32`` takes any float or integer array (float64 is rounded; beyond f32's range
it becomes infinite), ``i32`` any integer array whose values fit, ``bool`` a bool array; a
masked array is refused (its mask would be lost). Every refusal raises :class:`Error` with
mapsat's message (a file:line:col with a caret for an error in the program).

A program of several kernels (``let x = toGlobal(..) in``, one kernel per stage) is handled
as the command line handles it: a mapping names the maps of every kernel
(``"A=G1,B=G0,C=G1,D=G0"``), ``local`` may give a work group per kernel
(``{"sepblur_0_h": [16, 16]}``), ``emit`` returns a :class:`Pipeline`, ``run`` runs the
kernels in order, and ``tune`` tunes them one at a time.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import stat
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from . import _mapsat
from ._mapsat import Error

__all__ = ["Program", "Kernel", "Pipeline", "Run", "Tuned", "Error", "devices"]


# The process that first used a device. A child forked from it after that cannot: the OpenCL
# driver's threads do not survive a fork, and its first call would hang.
_DEVICE_PID: Optional[int] = None


def _device_use() -> None:
    """Refuses a device call in a process forked after its parent used a device."""
    global _DEVICE_PID
    if _DEVICE_PID is not None and _DEVICE_PID != os.getpid():
        raise Error("error: this process was forked after its parent used a device (OpenCL does not survive "
                    "a fork, a call would hang): run devices from the parent, or start workers with "
                    "multiprocessing's 'spawn' method (a Program pickles)")
    _DEVICE_PID = os.getpid()


def devices() -> List[str]:
    """The OpenCL platforms and devices and the CUDA devices, one line each."""
    _device_use()
    return _mapsat.devices()


@dataclass
class Kernel:
    """An emitted kernel: its source and manifest (entry point, arguments, launch sizes)."""

    source: str
    manifest: Dict[str, Any]


@dataclass
class Pipeline:
    """The kernels of a program of several kernels, in launch order, and the pipeline file
    ``mapsat emit`` writes (``NAME.pipeline.json``: each kernel's entry point and where its
    inputs come from, ``param:NAME`` or ``stage:ENTRY``, and the global memory in all)."""

    kernels: List[Kernel]
    pipeline: Dict[str, Any]


@dataclass
class Run:
    """A run on a device: its result, and the median and fastest times of the timed launches
    (of a program of several kernels: summed over its kernels, each kernel's median time in
    ``kernels``)."""

    output: np.ndarray
    median_ms: float
    min_ms: float
    device: str
    kernels: Dict[str, float] = field(default_factory=dict)


@dataclass
class Tuned:
    """The best kernel of a tune: its mapping and work group (give both to :meth:`Program.run`
    or :meth:`Program.emit`), its time, GFLOP/s and source, and ``mapsat tune``'s whole JSON
    report (``report``); the tune's files (log, report, plot, kernel) are in ``out``, and
    ``model`` is the learned cost model it saved (a later tune's ``model=``), if it trained one.

    Of a program of several kernels: the best sequence, whose mapping names every kernel's
    maps, ``local`` each kernel's work group by name, the time the sum of the kernels'; each
    kernel's own tune is in ``kernels`` (its files in ``out/KERNEL``, its learned model in
    ``kernels[i].model``), and ``source`` and ``model`` are ``None``."""

    mapping: Optional[str]
    local: "Optional[List[int] | Dict[str, List[int]]]"
    sizes: Dict[str, int]
    time_ms: float
    gflops: float
    source: Optional[str] = field(repr=False)
    out: str = ""
    model: Optional[str] = None
    report: Dict[str, Any] = field(default_factory=dict, repr=False)
    kernels: List["Tuned"] = field(default_factory=list, repr=False)


# The largest program file read, the command line's (`/dev/zero` would be read forever).
_MAX_SOURCE_BYTES = _mapsat.MAX_SOURCE_BYTES

_DTYPES = {"f32": np.float32, "i32": np.int32, "bool": np.bool_}


def _convert(name: str, value: Any, kind: str) -> np.ndarray:
    if isinstance(value, np.ma.MaskedArray):
        raise Error(f"parameter `{name}`: a masked array's mask would be dropped; give a.filled(value)")
    try:
        a = np.asarray(value)
    except ValueError as e:
        raise Error(f"parameter `{name}`: not an array ({e})") from None
    want = _DTYPES.get(kind)
    if want is None:
        raise Error(f"parameter `{name}` has elements of type {kind}, which numpy arrays cannot give")
    ok = {
        "f32": a.dtype.kind in "fiu",
        "i32": a.dtype.kind in "iu",
        "bool": a.dtype.kind == "b",
    }[kind]
    if not ok:
        raise Error(f"parameter `{name}` is {kind}; an array of {a.dtype} cannot be given for it")
    if kind == "i32" and a.size and (a.min() < -(2**31) or a.max() > 2**31 - 1):
        raise Error(f"parameter `{name}` is i32; the array holds values outside its range")
    # Not np.ascontiguousarray, which makes a scalar (a 0-d array) 1-d; aligned, which an array
    # from np.frombuffer at an odd offset is not (the extension panicked reading it).
    with np.errstate(over="ignore"):  # a float beyond f32's range becomes infinite, as documented
        return np.require(a, dtype=want, requirements=["C", "A"])


_I64 = (-(2**63), 2**63 - 1)


def _shown(value: Any) -> str:
    """``value`` in an error; an array given for an option may be an input whose parameter has
    the option's name."""
    if isinstance(value, (np.ndarray, list, tuple)):
        return ("an array (an input for a parameter named like this option is given as "
                "inputs={name: array})")
    return repr(value)


def _int(what: str, value: Any, low: int = 0, high: int = 2**64 - 1) -> int:
    """``value`` as an int in ``[low, high]``, else :class:`Error` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise Error(f"{what} must be an integer, not {_shown(value)}")
    if not low <= int(value) <= high:
        raise Error(f"{what} = {value} is out of range ({low} to {high})")
    return int(value)


def _str(what: str, value: Any, optional: bool = True) -> Optional[str]:
    """``value``, a str (or ``None`` when ``optional``), else :class:`Error` naming ``what``."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise Error(f"{what} must be a str, not {_shown(value)}")
    return value


def _seconds(what: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise Error(f"{what} must be a number of seconds, not {_shown(value)}")
    return float(value)


def _bool(what: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise Error(f"{what} must be True or False, not {_shown(value)}")
    return bool(value)


def _path(what: str, value: Any) -> str:
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise Error(f"{what} must be a path (str or os.PathLike), not {_shown(value)}")
    return os.fsdecode(value)


def _size_list(local: Any) -> List[int]:
    if isinstance(local, (str, bytes, dict)) or not hasattr(local, "__iter__"):
        raise Error(f"local must be a list of up to 3 work-group sizes, not {local!r}")
    return [_int("a work-group size", x, *_I64) for x in local]


def _local(local: Any) -> tuple:
    """``local`` as (the work group of every kernel, those given by kernel name)."""
    if local is None:
        return None, {}
    if isinstance(local, dict):
        for k in local:
            if not isinstance(k, str):
                raise Error(f"a kernel of local is named by a str, not {k!r}")
        return None, {k: _size_list(v) for k, v in local.items()}
    return _size_list(local), {}


def _tuned(report: Dict[str, Any], out: str) -> Tuned:
    """A tune's best from its JSON report (that of a program of several kernels holds each
    kernel's in ``kernels``)."""
    best = report.get("best") or {}
    kernels = report.get("kernels", [])
    local = best.get("local") or None
    if isinstance(local, dict):
        # An empty work group is code generation's default: none to give.
        local = {k: v for k, v in local.items() if v} or None
    return Tuned(
        mapping=best.get("mapping"),
        local=local,
        sizes={**report.get("sizes", {}), **best.get("tuning", {})},
        time_ms=report.get("best_ms", 0.0),
        gflops=report.get("best_gflops", 0.0),
        source=report.get("best_source"),
        out=out,
        model=report.get("model"),
        report=report,
        kernels=[_tuned(k, os.path.join(out, k.get("program", ""))) for k in kernels],
    )


class Program:
    """A program of mapsat's IR, parsed and type-checked."""

    def __init__(self, text: str, name: str = "<string>"):
        if not isinstance(text, str) or not isinstance(name, str):
            raise Error("a program is given as text (str), with a name (str)")
        try:
            self._p = _mapsat.Program(text, name)
        except UnicodeEncodeError as e:
            raise Error(f"{name}: the text is not valid Unicode ({e.reason})") from None
        # A kernel boundary nothing reads is left out, as the command line warns.
        for w in self._p.warnings():
            warnings.warn(w.rstrip(), stacklevel=2)

    @classmethod
    def load(cls, path: "os.PathLike[str] | str") -> "Program":
        """The program in the file ``path``."""
        # Not a file descriptor: open(3) would read fd 3, and close it.
        path = _path("path", path)
        try:
            # A FIFO (whose open would block) or a device is refused unread, as the command
            # line refuses it.
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise Error(f"error: cannot read {path}: not a regular file")
            with open(path, "rb") as f:
                data = f.read(_MAX_SOURCE_BYTES + 1)
        except OSError as e:
            if e.errno is None:  # the caller's own (a TimeoutError a signal handler raised)
                raise
            raise Error(f"error: cannot read {path}: {e.strerror}") from None
        except ValueError as e:
            raise Error(f"error: cannot read {path!r}: {e}") from None
        if len(data) > _MAX_SOURCE_BYTES:
            raise Error(f"error: {path} is larger than {_MAX_SOURCE_BYTES >> 20} MiB: not a program")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Error(f"error: cannot read {path}: not UTF-8 text ({e.reason})") from None
        # Absolute: the program's file is kept from being written over by a tune (`out`), also
        # after the working directory changes (a relative name then named another file).
        return cls(text, os.path.abspath(path))

    @property
    def name(self) -> str:
        """The program's name."""
        return self._p.name

    @property
    def params(self) -> List[str]:
        """The parameters' names, in order."""
        return [q[0] for q in self._p.params()]

    @property
    def maps(self) -> List[str]:
        """The labels of the program's maps (the names a mapping gives codes to)."""
        return self._p.maps()

    @property
    def size_defaults(self) -> Dict[str, Optional[int]]:
        """The size variables and their defaults (``None``: none)."""
        return dict(self._p.size_defaults())

    def __str__(self) -> str:
        return str(self._p)

    # Immutable: a copy is the program itself; a pickle is its text and name.
    def __copy__(self) -> "Program":
        return self

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Program":
        return self

    def __reduce__(self) -> tuple:
        return (Program, self._p.source())

    def __repr__(self) -> str:
        return f"<mapsat.Program {self.name}({', '.join(self.params)})>"

    def sizes(self, /, *args: Any, sizes: Optional[Dict[str, int]] = None,
              inputs: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Dict[str, int]:
        """Every size variable's value: ``sizes``, then those read off the inputs' shapes, then
        the defaults; checked (the program type-checks at them)."""
        return self._p.resolve(self._given(self._arrays(args, kwargs, inputs, required=False), sizes))

    def result_type(self, /, *args: Any, sizes: Optional[Dict[str, int]] = None,
                    inputs: Optional[Dict[str, Any]] = None, **kwargs: Any) -> str:
        """The result's type at the sizes."""
        return self._p.result_type(self._given(self._arrays(args, kwargs, inputs, required=False), sizes))

    def eval(self, /, *args: Any, sizes: Optional[Dict[str, int]] = None,
             inputs: Optional[Dict[str, Any]] = None, **kwargs: Any) -> np.ndarray:
        """The interpreter's result on the inputs (positional in parameter order, by name, or
        in ``inputs``). Interrupted (Ctrl-C), the evaluation goes on in the background until it
        ends, its result dropped."""
        arrays = self._arrays(args, kwargs, inputs)
        return self._p.eval(arrays, self._given(arrays, sizes))

    def mappings(self, /, n: int = 10, *, seed: int = 0, sizes: Optional[Dict[str, int]] = None,
                 target: Optional[str] = None, inputs: Optional[Dict[str, Any]] = None,
                 **kwargs: Any) -> List[str]:
        """Up to ``n`` valid mappings sampled from the space (``target``: a device profile)."""
        given = self._given(self._arrays((), kwargs, inputs, required=False), sizes)
        return self._p.sample(given, _int("n", n), _int("seed", seed), _str("target", target))

    def count(self, /, *, sizes: Optional[Dict[str, int]] = None, target: Optional[str] = None,
              inputs: Optional[Dict[str, Any]] = None, **kwargs: Any) -> "int | float":
        """The number of valid mappings (an estimate when the space is too large to count;
        ``math.inf`` beyond a float's range)."""
        given = self._given(self._arrays((), kwargs, inputs, required=False), sizes)
        value, _exact = self._p.count(given, _str("target", target))
        return int(round(value)) if math.isfinite(value) else math.inf

    def explain(self, /, mapping: str, *, sizes: Optional[Dict[str, int]] = None,
                target: Optional[str] = None, inputs: Optional[Dict[str, Any]] = None,
                **kwargs: Any) -> List[str]:
        """The constraints ``mapping`` violates; an empty list when it is valid."""
        given = self._given(self._arrays((), kwargs, inputs, required=False), sizes)
        return self._p.explain(_str("mapping", mapping, False), given, _str("target", target))

    def emit(self, /, mapping: Optional[str] = None, *, target: str = "opencl",
             sizes: Optional[Dict[str, int]] = None,
             local: "Optional[List[int] | Dict[str, List[int]]]" = None,
             profile: Optional[str] = None, inputs: Optional[Dict[str, Any]] = None,
             **kwargs: Any) -> "Kernel | Pipeline":
        """The kernel of the program mapped by ``mapping`` (or mapped as written), for
        ``target`` (``opencl`` or ``cuda``) under the device profile ``profile`` (a built-in
        name or a file; by default none for OpenCL, ``h100`` for CUDA); of a program of several
        kernels, a :class:`Pipeline` of them."""
        given = self._given(self._arrays((), kwargs, inputs, required=False), sizes)
        every, by_kernel = _local(local)
        emitted = json.loads(self._p.emit(given, _str("mapping", mapping), _str("target", target, False),
                                          every, by_kernel, _str("profile", profile)))
        kernels = [Kernel(k["source"], k["manifest"]) for k in emitted["kernels"]]
        if emitted["pipeline"] is None:
            return kernels[0]
        return Pipeline(kernels, emitted["pipeline"])

    def run(self, /, *args: Any, mapping: Optional[str] = None, device: str = "opencl:0:0",
            sizes: Optional[Dict[str, int]] = None,
            local: "Optional[List[int] | Dict[str, List[int]]]" = None,
            runs: int = 5, check: bool = True, timeout: float = 600.0, reassociate: bool = False,
            inputs: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Run:
        """Runs the kernel on ``device`` with the inputs; with ``check``, a result that
        differs from the interpreter's raises :class:`Error`. With ``reassociate``, OpenCL
        kernels are built as :meth:`tune` builds them, letting the compiler reassociate
        floating-point arithmetic (``mapsat run --reassociate``): a tuned kernel's time is of
        that build. A run longer than ``timeout`` seconds (``math.inf``: no limit), or one
        interrupted with Ctrl-C, raises and launches nothing more; a launch under way cannot
        be stopped, so it goes on in the background until it ends, and the device's later
        kernels in this process wait for it."""
        arrays = self._arrays(args, kwargs, inputs)
        every, by_kernel = _local(local)
        device = _str("device", device, False)
        args = (arrays, self._given(arrays, sizes), device, _str("mapping", mapping), every, by_kernel,
                _int("runs", runs, 1), _bool("check", check), _seconds("timeout", timeout),
                _bool("reassociate", reassociate))
        _device_use()
        out, median_ms, min_ms, name, kernels = self._p.run(*args)
        return Run(out, median_ms, min_ms, name, dict(kernels))

    def tune(self, /, *, sizes: Optional[Dict[str, int]] = None, device: str = "opencl:0:0",
             target: Optional[str] = None, trials: int = 64, random_trials: int = 32, seed: int = 0,
             out: "Optional[os.PathLike[str] | str]" = None, timeout: float = 60.0,
             resume: bool = False, batch: int = 16, model: "Optional[os.PathLike[str] | str]" = None,
             inputs: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Tuned:
        """Tunes the program on ``device`` (``mapsat tune``): ``trials`` candidates chosen by
        the cost models and ``random_trials`` at random, each checked against the interpreter.
        Inputs given by name fix the sizes by their shapes (they are not used otherwise: the
        tune measures on random inputs). Tunable sizes (tile sizes) not given are searched.
        ``timeout`` bounds each candidate's measurement (``math.inf``: no bound). The files go
        to ``out`` (a new temporary folder by default), replacing files of the same names there;
        a folder that holds a tune already is refused, unless ``resume`` continues it (what its
        log holds is not measured again). Interrupted (Ctrl-C), the tune stops before its next
        measurement; its log keeps what was measured. The learned cost model is retrained
        after each ``batch`` of trials and saved beside the log (``Tuned.model``); ``model``
        starts a tune from one saved by an earlier tune, of another program or size (transfer:
        it ranks the first batch, and its training data join this tune's). A tune in which no
        candidate ran correctly raises :class:`Error`."""
        given = self._given(self._arrays((), kwargs, inputs, required=False), sizes)
        out = _path("out", out) if out is not None else tempfile.mkdtemp(prefix=f"mapsat-tune-{self.name}-")
        args = (given, _str("device", device, False), out, _str("target", target), _int("trials", trials),
                _int("random_trials", random_trials), _int("seed", seed), _seconds("timeout", timeout),
                _bool("resume", resume), _int("batch", batch),
                _path("model", model) if model is not None else None)
        _device_use()
        report = json.loads(self._p.tune(*args))
        if not report.get("best"):
            failed = [f"{f['count']} {f['status']}, e.g. {(f['example'].splitlines() or [''])[0]}"
                      for k in report.get("kernels", [report]) for f in k.get("failures", [])]
            how = f": {'; '.join(failed)}" if failed else ""
            raise Error("error: no candidate ran correctly: each was refused by code generation, "
                        f"failed or gave a wrong result (see the report in {out}){how}")
        return _tuned(report, out)

    def _arrays(self, args: tuple, kwargs: Dict[str, Any], inputs: Optional[Dict[str, Any]] = None,
                required: bool = True) -> List[Optional[np.ndarray]]:
        """The inputs in parameter order: positional, by keyword, or in ``inputs`` (where a
        parameter named like an option of the method is given)."""
        if inputs is not None:
            if not isinstance(inputs, dict):
                raise Error(f"inputs must be a dict of parameter names to arrays, not {inputs!r}")
            twice = sorted(set(inputs) & set(kwargs))
            if twice:
                raise Error(f"parameter `{twice[0]}` is given twice")
            kwargs = {**kwargs, **inputs}
        params = self._p.params()
        if len(args) > len(params):
            raise Error(f"{self.name} takes {len(params)} input(s), {len(args)} given")
        unknown = sorted(set(kwargs) - {q[0] for q in params})
        if unknown:
            raise Error(f"{self.name} has no parameter {', '.join(map(repr, unknown))} "
                        f"(it has: {', '.join(q[0] for q in params)})")
        out: List[Optional[np.ndarray]] = []
        for i, (name, _dims, kind) in enumerate(params):
            if i < len(args) and name in kwargs:
                raise Error(f"parameter `{name}` is given twice")
            value = args[i] if i < len(args) else kwargs.get(name)
            if value is None and required:
                hint = (f" (a parameter named like an option is given as inputs={{{name!r}: array}})"
                        if name in _OPTIONS else "")
                raise Error(f"no input for parameter `{name}`{hint}")
            out.append(None if value is None else _convert(name, value, kind))
        return out

    def _given(self, arrays: List[Optional[np.ndarray]], sizes: Optional[Dict[str, int]]) -> Dict[str, int]:
        """``sizes``, and the size variables read off the arrays' shapes (the Rust half adds
        the defaults and checks)."""
        if sizes is not None and not isinstance(sizes, dict):
            raise Error(f"sizes must be a dict of size names to integers, not {sizes!r}")
        given = {}
        for k, v in (sizes or {}).items():
            if not isinstance(k, str):
                raise Error(f"a size is named by a str, not {k!r}")
            given[k] = _int(f"size `{k}`", v, *_I64)
        seen: Dict[str, tuple] = {}
        for (name, dims, _kind), a in zip(self._p.params(), arrays):
            if a is None:
                continue
            if a.ndim != len(dims):
                raise Error(f"parameter `{name}` expects an array of {len(dims)} dimension(s), "
                            f"got shape {list(a.shape)}")
            for axis, var in enumerate(dims):
                if var is None or var in (sizes or {}):
                    continue
                if var in seen and seen[var][0] != a.shape[axis]:
                    first = seen[var]
                    raise Error(f"size `{var}` is {first[0]} by `{first[1]}`'s shape and "
                                f"{a.shape[axis]} by `{name}`'s")
                seen[var] = (a.shape[axis], name)
                given[var] = int(a.shape[axis])
        return given


def _options() -> set:
    """The names of the options of :class:`Program`'s methods: an input for a parameter named
    like one is given in ``inputs``."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {name for m, method in inspect.getmembers(Program, inspect.isfunction) if not m.startswith("_")
            for name, q in inspect.signature(method).parameters.items() if q.kind in kinds and name != "self"}


_OPTIONS = _options()
