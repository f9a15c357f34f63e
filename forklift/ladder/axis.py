"""The ladder's axis: which flag or knob moves, over which values, and what to recommend (pure).

`--axis gpu-memory-utilization=0.93,0.95,0.972` lists values; `--axis KEY=0.90:0.97:0.01`
is an inclusive range. A KEY in capitals (VLLM_CPU_KVCACHE_SPACE) is an environment knob,
anything else an engine flag. Values are climbed from the lowest: memory settings fail
from the top, so the first failure above a pass is the boundary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from forklift.errors import UsageError

_ENV_KEY = re.compile(r"[A-Z][A-Z0-9_]*")
_FLAG_KEY = re.compile(r"[a-z0-9][a-z0-9-]*")
MAX_VALUES = 64


@dataclass(frozen=True)
class Axis:
    key: str
    values: tuple[str, ...]  # ascending, as given (their text goes to the engine unchanged)

    @property
    def is_env(self) -> bool:
        return bool(_ENV_KEY.fullmatch(self.key))

    def set_item(self, value: str) -> str:
        """The `--set` item that puts this value on a boot."""
        return f"{'env' if self.is_env else 'args'}.{self.key}={value}"


def _number(text: str, where: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise UsageError(f"--axis {where}: {text.strip()!r} is not a number") from None
    if not value.is_finite():
        raise UsageError(f"--axis {where}: {text.strip()!r} is not a finite number")
    return value


def _range(text: str, where: str) -> list[Decimal]:
    parts = text.split(":")
    if len(parts) != 3:
        raise UsageError(f"--axis {where}: a range is START:STOP:STEP, e.g. 0.90:0.97:0.01")
    start, stop, step = (_number(p, where) for p in parts)
    if step <= 0 or stop < start:
        raise UsageError(f"--axis {where}: a range needs STEP > 0 and STOP >= START")
    count = int((stop - start) / step) + 1
    if count > MAX_VALUES:
        raise UsageError(f"--axis {where}: {count} values, more than {MAX_VALUES} boots; take a coarser step")
    return [start + i * step for i in range(count)]


def parse_axis(text: str) -> Axis:
    """`KEY=V1,V2,...` or `KEY=START:STOP:STEP`; one line naming the culprit when it is neither."""
    key, sep, spec = text.partition("=")
    key = key.strip()
    if not sep or not spec.strip():
        raise UsageError(f"--axis {text!r}: expected KEY=V1,V2,... or KEY=START:STOP:STEP")
    if not (_ENV_KEY.fullmatch(key) or _FLAG_KEY.fullmatch(key.lstrip("-"))):
        raise UsageError(f"--axis {text!r}: {key!r} is neither a flag (max-model-len) nor a knob (VLLM_X)")
    key = key if _ENV_KEY.fullmatch(key) else key.lstrip("-")
    if ":" in spec:
        numbers = _range(spec, text)
        values = [format(n.normalize(), "f") if n == n.to_integral() else str(n) for n in numbers]
    else:
        values = [v.strip() for v in spec.split(",") if v.strip()]
        numbers = [_number(v, text) for v in values]
    if len(set(numbers)) != len(numbers):
        raise UsageError(f"--axis {text!r}: a value is listed twice")
    if len(values) < 2:
        raise UsageError(f"--axis {text!r}: a ladder needs at least two values")
    ordered = sorted(zip(numbers, values, strict=False))
    return Axis(key, tuple(v for _, v in ordered))


@dataclass(frozen=True)
class Recommendation:
    highest_pass: str | None
    recommended: str | None
    note: str


def recommend(axis: Axis, passed: dict[str, bool], margin: str | None = None) -> Recommendation:
    """The highest value that passed, and the one to ship: a step below it, or `margin` below it."""
    passes = [v for v in axis.values if passed.get(v)]
    if not passes:
        return Recommendation(None, None, "no value passed: lower the ladder")
    top = passes[-1]
    failed_below = [v for v in axis.values if v in passed and not passed[v] and Decimal(v) < Decimal(top)]
    caveat = f"; not monotonic: {', '.join(failed_below)} failed below it" if failed_below else ""
    if margin is not None:
        value = Decimal(top) - _number(margin, f"--margin {margin}")
        return Recommendation(top, str(value), f"{margin} below the highest pass{caveat}")
    index = axis.values.index(top)
    if index == 0:
        return Recommendation(top, None, f"the lowest value is the highest pass: no step below to recommend{caveat}")
    below = axis.values[index - 1]
    return Recommendation(top, below, f"one step below the highest pass{caveat}")
