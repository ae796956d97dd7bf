"""The ops the book teaches, each as a description every other module takes:
its float64 reference and semantics, fresh inputs, bytes moved, how outputs are
judged per dtype, how a stage's torch op is called, and its torch and peer
contenders. Nothing outside this module asks which op it holds.

Inputs travel as a dict: tensors (``x``, ``weight``, ``bias``) and parameters
(``eps``, ``approximate``).
"""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F

from . import check, reference

LARGE_COLS = (1024, 4096, 8192, 16384)  # row lengths of the norms' ladder
SMALL_SHAPE = (32, 4096)  # a decode-sized batch: launch overhead and latency matter
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def dtype_of(name: str | torch.dtype) -> torch.dtype:
    if isinstance(name, torch.dtype):
        return name
    aliases = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "half": "float16"}
    key = aliases.get(name, name)
    if key not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}; use one of {', '.join(DTYPES)}")
    return DTYPES[key]


def dtype_name(dtype: torch.dtype) -> str:
    return next(k for k, v in DTYPES.items() if v == dtype)


def element_size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _compiled(fn):
    """torch.compile(fn, dynamic=False), made fresh by each call so that every
    benchmark case compiles (and is warmed up) for its own shape before timing."""
    return torch.compile(fn, dynamic=False)


class Op:
    name = ""
    title = ""
    out_op = ""  # the stage op that writes into a given tensor
    standard_shapes: list[tuple] = check.STANDARD_SHAPES

    # -- inputs and the truth ------------------------------------------------------
    def make_inputs(self, shape, dtype=torch.float32, device="cpu", generator=None) -> dict:
        raise NotImplementedError

    def reference(self, inputs: dict) -> torch.Tensor:
        raise NotImplementedError

    def nbytes(self, shape, dtype) -> int:
        """Bytes the op must move: every input read once, the output written once."""
        raise NotImplementedError

    def rows_for_bytes(self, nbytes: int, cols: int, dtype) -> int:
        """Rows of length `cols` for a case that moves at least `nbytes` (rounded up, so
        that a case meant to be large is timed as one: see bench.mode_for)."""
        return max(1, math.ceil(nbytes / (2 * cols * element_size(dtype))))

    def check(self, out, ref, dtype, what="output") -> check.CheckResult:
        return check.assert_close(out, ref, dtype, what, check.tolerance(dtype))

    # -- calling stages and peers ------------------------------------------------
    def call_stage(self, ops, inputs: dict, out=None, variant=None):
        raise NotImplementedError

    def bad_calls(self, ops, device="cuda") -> dict:
        """what -> a call of the stage that must raise ValueError/TypeError before any launch."""
        inp = self.make_inputs((8, 64), torch.float32, device)
        x = inp["x"]

        def call(out=None, **changes):
            return lambda: self.call_stage(ops, {**inp, **changes}, out)

        cases = {"float64 input": call(x=x.double()), "transposed input": call(x=x.t()),
                 "out of another dtype": call(torch.empty(8, 64, dtype=torch.float64, device=device)),
                 "out of another shape": call(torch.empty(8, 32, dtype=x.dtype, device=device))}
        if device != "cpu":
            cases["CPU input"] = call(**{k: v.cpu() if torch.is_tensor(v) else v for k, v in inp.items()})
        return cases

    def torch_contenders(self) -> dict:
        """name -> fn(inputs): torch eager and torch.compile(dynamic=False)."""
        raise NotImplementedError

    def peer_contenders(self) -> dict:
        """name -> fn(inputs) for other projects' kernels importable here (Liger)."""
        return {}

    def contenders(self) -> dict:
        return {**self.torch_contenders(), **self.peer_contenders()}

    def ladder_shapes(self, dtype, large_bytes: int) -> list[tuple[int, ...]]:
        """The benchmark ladder's shapes: four row lengths moving `large_bytes`, and a small batch."""
        return [(self.rows_for_bytes(large_bytes, c, dtype), c) for c in LARGE_COLS] + [SMALL_SHAPE]


def _liger(module: str, cls: str):
    """A Liger-Kernel autograd Function, or None where liger-kernel (and Triton) is not installed."""
    try:
        with warnings.catch_warnings():  # its import pulls tqdm, which warns about Jupyter widgets
            warnings.simplefilter("ignore")
            mod = __import__(f"liger_kernel.ops.{module}", fromlist=[cls])
        return getattr(mod, cls)
    except Exception:  # ImportError, or Triton failing to initialise without a GPU
        return None


class RMSNorm(Op):
    """y = x / sqrt(mean(x^2) + eps) * weight over the last dim; for fp16/bf16 the
    statistics, the normalization and the weight multiply are done in fp32 and
    the result is rounded once (torch's F.rms_norm)."""

    name, title, out_op = "rmsnorm", "RMSNorm", "rms_norm_out"
    eps = 1e-6

    def make_inputs(self, shape, dtype=torch.float32, device="cpu", generator=None):
        x, w = check.random_rmsnorm_inputs(shape, dtype, device, generator)
        return {"x": x, "weight": w, "eps": self.eps}

    def reference(self, inputs):
        return reference.rms_norm(inputs["x"], inputs["weight"], inputs["eps"])

    def nbytes(self, shape, dtype):
        numel = math.prod(shape)
        return (2 * numel + shape[-1]) * element_size(dtype)

    def bad_calls(self, ops, device="cuda"):
        inp = self.make_inputs((8, 64), torch.float32, device)
        return {**super().bad_calls(ops, device),
                "weight too short": lambda: self.call_stage(ops, {**inp, "weight": inp["weight"][:-1]}),
                "eps = 0": lambda: self.call_stage(ops, {**inp, "eps": 0.0}),
                "out aliases x": lambda: self.call_stage(ops, inp, inp["x"])}

    def call_stage(self, ops, inputs, out=None, variant=None):
        if out is None:
            return ops.rms_norm(inputs["x"], inputs["weight"], inputs["eps"])
        return ops.rms_norm_out(inputs["x"], inputs["weight"], inputs["eps"], out)

    def torch_contenders(self):
        def eager(inp):
            x = inp["x"]
            return F.rms_norm(x, (x.shape[-1],), inp["weight"], inp["eps"])

        return {"torch F.rms_norm": eager, "torch.compile F.rms_norm": _compiled(eager)}

    def peer_contenders(self):
        liger = _liger("rms_norm", "LigerRMSNormFunction")
        if liger is None:
            return {}
        return {"Liger rms_norm": lambda inp: liger.apply(inp["x"], inp["weight"], inp["eps"])}


class LayerNorm(Op):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last dim, biased
    variance, statistics in fp32 for every dtype (torch's F.layer_norm)."""

    name, title, out_op = "layernorm", "LayerNorm", "layer_norm_out"
    eps = 1e-5

    def make_inputs(self, shape, dtype=torch.float32, device="cpu", generator=None):
        x, w = check.random_rmsnorm_inputs(shape, dtype, device, generator)
        b = torch.randn(shape[-1], device=device, generator=generator).to(dtype)
        return {"x": x, "weight": w, "bias": b, "eps": self.eps}

    def reference(self, inputs):
        return reference.layer_norm(inputs["x"], inputs["weight"], inputs["bias"], inputs["eps"])

    def nbytes(self, shape, dtype):
        numel = math.prod(shape)
        return (2 * numel + 2 * shape[-1]) * element_size(dtype)

    def bad_calls(self, ops, device="cuda"):
        inp = self.make_inputs((8, 64), torch.float32, device)
        return {**super().bad_calls(ops, device),
                "bias too long": lambda: self.call_stage(ops, {**inp, "bias": torch.zeros(65, device=device)}),
                "eps = -1": lambda: self.call_stage(ops, {**inp, "eps": -1.0}),
                "out aliases x": lambda: self.call_stage(ops, inp, inp["x"])}

    def call_stage(self, ops, inputs, out=None, variant=None):
        args = (inputs["x"], inputs["weight"], inputs["bias"], inputs["eps"], 0 if variant is None else variant)
        return ops.layer_norm(*args) if out is None else ops.layer_norm_out(*args, out)

    def torch_contenders(self):
        def eager(inp):
            x = inp["x"]
            return F.layer_norm(x, (x.shape[-1],), inp["weight"], inp["bias"], inp["eps"])

        return {"torch F.layer_norm": eager, "torch.compile F.layer_norm": _compiled(eager)}

    def peer_contenders(self):
        liger = _liger("layer_norm", "LigerLayerNormFunction")
        if liger is None:
            return {}
        return {"Liger layer_norm": lambda inp: liger.apply(inp["x"], inp["weight"], inp["bias"], inp["eps"])}


class GELU(Op):
    """y = GELU(x) elementwise, computed in fp32 and rounded once (torch's F.gelu),
    in the exact form (approximate='none', erf) or the tanh form. +inf gives +inf,
    -inf gives 0 and NaN stays NaN. fp16/bf16 outputs are judged within 1 ulp of
    float64. fp32 outputs: within FP32_ULPS ulp, or FP32_RTOL relative (the bound
    chapter 06's kernel states: 6.8 ulp in the erf form, checked on every fp32 input;
    in the tanh form 4 ulp above x = -2, and up to 3e-5 relative in the far negative
    tail, where the fp32 rounding of u is multiplied by exp(2u))."""

    FP32_ULPS, FP32_RTOL = 8, 4e-5
    out_op = "gelu_out"
    standard_shapes = [(0,), (1,), (7,), (8,), *[(8 * 1000 + k,) for k in range(1, 8)], (3, 1000), (33, 4099),
                       (2, 3, 5), (1, 65537), (70000, 8)]

    def __init__(self, approximate: str):
        self.approximate = approximate
        self.name = "gelu" if approximate == "none" else "gelu_tanh"
        self.title = "GELU" if approximate == "none" else "GELU (tanh)"

    def make_inputs(self, shape, dtype=torch.float32, device="cpu", generator=None):
        # N(0, 3^2): covers the curved part, both tails and (in fp16) the region
        # where a half-precision tanh overflows.
        x = torch.randn(tuple(shape), device=device, generator=generator) * 3
        return {"x": x.to(dtype), "approximate": self.approximate}

    def reference(self, inputs):
        return reference.gelu(inputs["x"], inputs["approximate"])

    def nbytes(self, shape, dtype):
        numel = math.prod(shape)
        return 2 * numel * element_size(dtype)

    def ladder_shapes(self, dtype, large_bytes):
        """A small batch, then 16 MiB, `large_bytes` and 4x that moved, rows of 4096."""
        sizes = (16 * 2**20, large_bytes, 4 * large_bytes)
        return [SMALL_SHAPE] + [(self.rows_for_bytes(b, 4096, dtype), 4096) for b in sizes]

    def check(self, out, ref, dtype, what="output"):
        if dtype == torch.float32:
            return check.assert_within_ulps(out, ref, dtype, self.FP32_ULPS, what, self.FP32_RTOL)
        return check.assert_within_ulps(out, ref, dtype, 1, what)

    def bad_calls(self, ops, device="cuda"):
        inp = self.make_inputs((8, 64), torch.float32, device)
        buf = torch.randn(8 * 64 + 8, device=device)
        return {**super().bad_calls(ops, device),
                "approximate='fast'": lambda: self.call_stage(ops, {**inp, "approximate": "fast"}),
                "out overlaps x": lambda: self.call_stage(ops, {**inp, "x": buf[:512].view(8, 64)},
                                                          buf[8:].view(8, 64))}

    def call_stage(self, ops, inputs, out=None, variant=None):
        args = (inputs["x"], inputs["approximate"], 2 if variant is None else variant)
        return ops.gelu(*args) if out is None else ops.gelu_out(*args, out)

    def torch_contenders(self):
        def eager(inp):
            return F.gelu(inp["x"], approximate=inp["approximate"])

        return {"torch F.gelu": eager, "torch.compile F.gelu": _compiled(eager)}

    # Liger has no standalone GELU (only the fused GEGLU), so no peer here.


OPS: dict[str, Op] = {op.name: op for op in (RMSNorm(), LayerNorm(), GELU("none"), GELU("tanh"))}


def get_op(name: str | Op) -> Op:
    if isinstance(name, Op):
        return name
    if name not in OPS:
        raise KeyError(f"unknown op {name!r}; known: {', '.join(OPS)}")
    return OPS[name]
