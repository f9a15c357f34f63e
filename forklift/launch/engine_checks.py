"""A resolved launch setting checked against the engine: registered knobs, known flags, legacy variables.

Refusals raise UsageError naming the profile layer that set the culprit; things
that boot but may not do what the profile says come back as warnings.
"""

from __future__ import annotations

import difflib

from forklift.engines import EngineAdapter
from forklift.errors import UsageError
from forklift.knobs.flags import EngineFlags
from forklift.knobs.registry import Registry
from forklift.launch.resolve import Resolved


def check_knobs(resolved: Resolved, adapter: EngineAdapter, registry: Registry) -> None:
    known = set(registry.names)
    for name in resolved.env:
        if name.startswith(adapter.env_prefix) and name not in known:
            close = difflib.get_close_matches(name, registry.names, n=1)
            hint = f" (closest: {close[0]})" if close else ""
            raise UsageError(
                f"profile {resolved.profile} ({resolved.env_sources.get(name, '?')}): {name} is not a knob "
                f"registered in {adapter.registry_file} of the engine{hint}"
            )


def check_flags(resolved: Resolved, flags: EngineFlags) -> None:
    for flag in resolved.flags:
        where = f"profile {resolved.profile} ({flag.source})"
        base = flag.name.split(".", 1)[0]  # --compilation-config.mode sets one field of a JSON flag
        spec = flags.flags.get(base)
        if spec is None:
            raise UsageError(
                f"{where}: {flag.name} is not a flag of the engine {flags.version}{flags.closest(flag.name)}"
            )
        if base != flag.name:
            if not spec.takes_value or spec.choices is not None:
                raise UsageError(f"{where}: {base} takes no sub-fields ({flag.name})")
            continue
        if not spec.takes_value and flag.values:
            raise UsageError(
                f"{where}: {flag.name} is a switch, got the value {flag.values[0]!r} (write true or false)"
            )
        if spec.takes_value and not flag.values and not spec.optional_value:
            raise UsageError(f"{where}: {flag.name} needs a value, got a bare switch (true/false)")
        if spec.choices is not None:
            for value in flag.values:
                if value not in spec.choices:
                    raise UsageError(f"{where}: {flag.name} {value!r} is not one of {', '.join(spec.choices)}")


def legacy_warnings(resolved: Resolved, adapter: EngineAdapter) -> list[str]:
    """A legacy variable and the flag that replaced it: one silently beats the other."""
    warnings = []
    names = {flag.name for flag in resolved.flags}
    for variable, flag in adapter.deprecated_env.items():
        if variable not in resolved.env:
            continue
        if flag in names:
            warnings.append(
                f"{variable} and {flag} are both set: they set the same thing and only one takes effect; keep {flag}"
            )
        else:
            warnings.append(f"{variable} is a legacy variable shadowing {flag}: prefer the flag")
    return warnings
