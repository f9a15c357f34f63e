"""Profile resolution, a pure function: (profiles, name, choices, overrides) -> exact argv + env.

Nothing here looks at the machine: `forklift launch --print` works with no
engine installed. Checks against the installed engine (known flags, registered
knobs) are in check.py.
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass, field
from typing import Any

from forklift.config.load import extends_chain
from forklift.config.profile import ArgValue, EnvValue, MemoryLimits, Profile, Ray
from forklift.config.toml import tomllib
from forklift.engines import EngineAdapter
from forklift.errors import ConfigError, UsageError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_HEALTH_TIMEOUT = 600.0
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.I)
REDACTED = "<redacted>"


@dataclass(frozen=True)
class Flag:
    """One engine flag as resolved: `name` is '--max-model-len'; `values` is empty for a bare switch."""

    name: str
    values: tuple[str, ...]
    source: str  # where it came from: "profile base", "spec=ngram", "--set"


@dataclass(frozen=True)
class Resolved:
    profile: str
    choices: dict[str, str]
    python: str | None
    model: str
    served_name: str
    host: str
    port: int
    health_timeout: float
    command: list[str]  # the engine command before model and flags
    flags: list[Flag]
    env: dict[str, str]
    env_sources: dict[str, str] = field(default_factory=dict)
    gpus: list[int] = field(default_factory=list)  # the profile's GPU indices, one per rank
    world_size: int = 1  # tensor x pipeline x data parallel
    parallel: dict[str, int] = field(default_factory=dict)  # flag -> size, the ones given
    ray: Ray | None = None  # a multi-node profile
    memory: MemoryLimits | None = None  # run inside a memory-bounded cgroup

    @property
    def argv(self) -> list[str]:
        argv = [*self.command, self.model]
        for flag in self.flags:
            argv.append(flag.name)
            argv.extend(flag.values)
        return argv

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def api_key(self) -> str | None:
        """The key the server requires (--api-key): a client of this launch must send it."""
        flag = next((f for f in self.flags if f.name == "--api-key"), None)
        return flag.values[0] if flag and flag.values else None


def flatten(profiles: dict[str, Profile], name: str) -> Profile:
    """The profile with its `extends` chain merged in (the child wins, key by key)."""
    if name not in profiles:
        raise UsageError(f"unknown profile {name!r} (profiles: {', '.join(sorted(profiles)) or 'none'})")
    chain = extends_chain(profiles, name)
    merged: dict[str, Any] = {}
    for ancestor in reversed(chain):
        data = profiles[ancestor].model_dump(exclude_unset=True)
        for key, value in data.items():
            if key in ("args", "env", "defaults"):
                merged[key] = {**merged.get(key, {}), **value}
            elif key == "axes":
                axes = dict(merged.get("axes", {}))
                for axis, choices in value.items():
                    axes[axis] = {**axes.get(axis, {}), **choices}
                merged["axes"] = axes
            else:
                merged[key] = value
    merged["extends"] = None
    return Profile.model_validate(merged)


def parse_sets(sets: list[str]) -> tuple[dict[str, str], dict[str, object]]:
    """`--set` items: `axis=choice`, `args.FLAG=VALUE` (a TOML value) or `env.NAME=VALUE`."""
    choices: dict[str, str] = {}
    overrides: dict[str, object] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set {item!r}: expected KEY=VALUE (axis=choice, args.FLAG=VALUE or env.NAME=VALUE)")
        if key.startswith(("args.", "env.")):
            overrides[key] = _toml_value(value) if key.startswith("args.") else value
        else:
            choices[key] = value
    return choices, overrides


def _toml_value(text: str) -> object:
    """`4096` -> 4096, `true` -> True, `{method = "ngram"}` -> dict; anything else stays text."""

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def flag_name(key: str) -> str:
    return "--" + key.lstrip("-").replace("_", "-")


def flag_values(name: str, value: ArgValue, where: str) -> tuple[str, tuple[str, ...]]:
    """How one TOML value becomes argv words; a value no flag can take is refused, naming it."""
    if isinstance(value, bool):
        return (name, ()) if value else ("--no-" + name[2:], ())
    if isinstance(value, dict):
        return name, (json.dumps(value, separators=(",", ":")),)
    if isinstance(value, list):
        if not value:
            raise ConfigError(f"{where}: {name} is an empty list (remove it instead)")
        if any(isinstance(v, (dict, list)) for v in value):
            return name, (json.dumps(value, separators=(",", ":")),)
        if any(isinstance(v, (bool, datetime.date, datetime.time)) for v in value):
            raise ConfigError(f"{where}: {name} = {value!r}: a list of booleans or dates is not a flag value")
        return name, tuple(str(v) for v in value)
    if isinstance(value, (int, float, str)):
        return name, (str(value),)
    raise ConfigError(f"{where}: {name} = {value!r}: a {type(value).__name__} is not a flag value")


def env_text(value: EnvValue | object, where: str) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise ConfigError(f"{where}: {value!r}: a {type(value).__name__} is not an environment value")


def resolve(
    profiles: dict[str, Profile],
    name: str,
    choices: dict[str, str],
    overrides: dict[str, object],
    adapter: EngineAdapter,
) -> Resolved:
    profile = flatten(profiles, name)
    picked = _pick_choices(profile, name, choices)
    where = f"profiles.{name}"
    if not profile.model:
        raise ConfigError(f'{where}: no model (set model = "..." in the profile or one it extends)')
    # Flags in layers: the profile, then each picked choice, then --set; a later layer replaces
    # the same flag in place, so the argv order is stable.
    layers: list[tuple[str, dict[str, object], dict[str, object]]] = [(f"profile {name}", profile.args, profile.env)]
    for axis, choice in picked.items():
        layer = profile.axes[axis][choice]
        layers.append((f"{axis}={choice}", layer.args, layer.env))
    layers.append(
        (
            "--set",
            {k[5:]: v for k, v in overrides.items() if k.startswith("args.")},
            {k[4:]: v for k, v in overrides.items() if k.startswith("env.")},
        )
    )
    flags: dict[str, Flag] = {}  # keyed by the flag without its --no- prefix: a later layer replaces in place
    env: dict[str, str] = {}
    env_sources: dict[str, str] = {}
    for source, args, variables in layers:
        for key, value in args.items():
            name_, values = flag_values(flag_name(key), value, f"{where} ({source})")
            base = "--" + name_[5:] if name_.startswith("--no-") else name_
            flags[base] = Flag(name_, values, source)
        for key, value in variables.items():
            env[key] = env_text(value, f"{where} ({source}) env {key}")
            env_sources[key] = source
    fixed = [
        Flag("--served-model-name", (profile.served_name or profile.model,), f"profile {name}"),
        Flag("--host", (profile.host or DEFAULT_HOST,), f"profile {name}"),
        Flag("--port", (str(profile.port or DEFAULT_PORT),), f"profile {name}"),
    ]
    for flag in fixed:
        if flag.name in flags:
            raise ConfigError(f"{where}: set {flag.name} with the profile's own key, not in args")
    parallel = _parallel_sizes(flags, adapter, where)
    world = 1
    for size in parallel.values():
        world *= size
    if profile.gpus is not None:
        if "CUDA_VISIBLE_DEVICES" in env:
            raise ConfigError(f"{where}: gpus and env CUDA_VISIBLE_DEVICES both given: keep gpus")
        nodes = 1 + len(profile.ray.workers) if profile.ray else 1
        if len(profile.gpus) * nodes != world:
            raise ConfigError(
                f"{where}.gpus: {len(profile.gpus)} GPU(s) x {nodes} node(s) for a world of {world} "
                f"({' x '.join(f'{k[2:]} {v}' for k, v in parallel.items()) or 'one rank'})"
            )
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in profile.gpus)
        env_sources["CUDA_VISIBLE_DEVICES"] = f"profile {name} gpus"
    for key, value in adapter.forced_env.items():
        if env.get(key, value) != value:
            raise ConfigError(f"{where}: env {key}={env[key]}: forklift keeps it {value} (NVLink multicast off)")
        env[key] = value
        env_sources[key] = "forklift (NVLink multicast off)"
    if profile.ray is not None and "--distributed-executor-backend" not in flags:
        flags["--distributed-executor-backend"] = Flag(
            "--distributed-executor-backend", ("ray",), f"profile {name} ray"
        )
    return Resolved(
        profile=name,
        choices=picked,
        python=profile.python,
        model=profile.model,
        served_name=profile.served_name or profile.model,
        host=profile.host or DEFAULT_HOST,
        port=profile.port or DEFAULT_PORT,
        health_timeout=profile.health_timeout or DEFAULT_HEALTH_TIMEOUT,
        command=list(profile.command) if profile.command else adapter.serve_argv(profile.python),
        flags=[*fixed, *flags.values()],
        env=env,
        env_sources=env_sources,
        gpus=list(profile.gpus or []),
        world_size=world,
        parallel=parallel,
        ray=profile.ray,
        memory=profile.memory,
    )


def _parallel_sizes(flags: dict[str, Flag], adapter: EngineAdapter, where: str) -> dict[str, int]:
    sizes = {}
    for name in adapter.parallel_flags:
        flag = flags.get(name)
        if flag is None:
            continue
        try:
            sizes[name] = int(flag.values[0])
        except (ValueError, IndexError):
            raise ConfigError(f"{where}: {name} {' '.join(flag.values)!r}: expected a whole number") from None
        if sizes[name] < 1:
            raise ConfigError(f"{where}: {name} {sizes[name]}: expected at least 1")
    return sizes


def rank_lines(resolved: Resolved) -> list[str]:
    """What --print shows per GPU: which rank runs where, and the NCCL/NVLink environment every rank gets."""
    if not resolved.gpus:
        return []
    tp = resolved.parallel.get("--tensor-parallel-size", 1)
    shared = " ".join(
        f"{k}={v}" for k, v in shown_env(resolved).items() if k.startswith(("NCCL_", "TORCH_SYMM", "NVSHMEM_"))
    )
    lines = []
    hosts = [resolved.ray.head, *resolved.ray.workers] if resolved.ray else ["this host"]
    for node, host in enumerate(hosts):
        for local, gpu in enumerate(resolved.gpus):
            rank = node * len(resolved.gpus) + local
            lines.append(
                f"gpu {gpu} on {host}: rank {rank} (TP {rank % tp}, {'PP/DP group ' + str(rank // tp) if rank >= tp else 'first group'}) "
                f"CUDA_VISIBLE_DEVICES={resolved.env['CUDA_VISIBLE_DEVICES']} {shared}"
            )
    return lines


def ray_commands(resolved: Resolved) -> list[str]:
    """The Ray cluster a multi-node profile needs, one command per node (run by hand, before the launch)."""
    ray = resolved.ray
    if ray is None:
        return []
    env = " ".join(
        f"{k}={v}" for k, v in shown_env(resolved).items() if k.startswith(("NCCL_", "TORCH_SYMM", "NVSHMEM_", "CUDA_"))
    )
    head = f"on {ray.head}: {env} ray start --head --port {ray.port} --num-gpus {ray.gpus_per_node}"
    workers = [
        f"on {host}: {env} ray start --address {ray.head}:{ray.port} --num-gpus {ray.gpus_per_node}"
        for host in ray.workers
    ]
    return [head, *workers, f"then on {ray.head}: the argv above (vLLM finds the cluster through Ray)"]


def placement_lines(resolved: Resolved) -> list[str]:
    """The placement group vLLM's Ray executor asks the cluster for: one bundle per rank, rank 0 on the head.

    As vLLM's ray_utils builds it (world-size bundles of one GPU, strategy PACK, the first pinned to the
    node serve runs on with a sliver of its node resource); printed so a reader can check the cluster
    can hold it. Not run here: no multi-node GPU cluster was at hand to boot it on."""
    ray = resolved.ray
    if ray is None:
        return []
    first = {"GPU": 1.0, f"node:{ray.head}": 0.001}
    bundles = [first, *({"GPU": 1.0} for _ in range(resolved.world_size - 1))]
    nodes = 1 + len(ray.workers)
    return [
        f"strategy PACK, {len(bundles)} bundles (world size {resolved.world_size} over {nodes} nodes "
        f"x {ray.gpus_per_node} GPUs):",
        *(json.dumps(bundle, sort_keys=True) for bundle in bundles),
    ]


def _pick_choices(profile: Profile, name: str, choices: dict[str, str]) -> dict[str, str]:
    axes = profile.axes
    for axis, value in choices.items():
        if axis not in axes:
            known = ", ".join(sorted(axes)) or "none"
            raise UsageError(f"profile {name}: unknown axis {axis!r} (axes: {known}; flags: --set args.FLAG=VALUE)")
        if value not in axes[axis]:
            raise UsageError(f"profile {name}: axis {axis}: unknown value {value!r} (one of {', '.join(axes[axis])})")
    for axis, value in profile.defaults.items():
        if axis not in axes:
            raise ConfigError(f"profiles.{name}.defaults: unknown axis {axis!r}")
        if value not in axes[axis]:
            raise ConfigError(
                f"profiles.{name}.defaults.{axis}: unknown value {value!r} (one of {', '.join(axes[axis])})"
            )
    picked: dict[str, str] = {}
    for axis, values in axes.items():
        chosen = choices.get(axis, profile.defaults.get(axis))
        if chosen is None:
            raise UsageError(f"profile {name}: axis {axis} needs a value: --set {axis}={'|'.join(values)}")
        picked[axis] = chosen
    return picked


def is_secret(name: str) -> bool:
    return bool(_SECRET.search(name))


def shown(name: str, value: str) -> str:
    """The one redaction rule: the value of a flag or variable with a secret-looking name is never shown."""
    return REDACTED if is_secret(name) else value


def shown_argv(resolved: Resolved) -> list[str]:
    """The argv as receipts and --print show it: a secret flag's values redacted."""
    words = [*resolved.command, resolved.model]
    for flag in resolved.flags:
        words.append(flag.name)
        words.extend(shown(flag.name, v) for v in flag.values)
    return words


def shown_env(resolved: Resolved) -> dict[str, str]:
    """The environment as receipts and --print show it: a secret variable's value redacted."""
    return {k: shown(k, v) for k, v in resolved.env.items()}


def setting_name(resolved: Resolved) -> str:
    """The setting as a label: profile, axis choices, then what --set changed (args and env), secrets redacted."""
    sets = [
        f"{f.name[2:]}={' '.join(shown(f.name, v) for v in f.values) or 'true'}"
        for f in resolved.flags
        if f.source == "--set"
    ]
    sets += [f"{k}={v}" for k, v in shown_env(resolved).items() if resolved.env_sources.get(k) == "--set"]
    return " ".join([resolved.profile, *(f"{k}={v}" for k, v in resolved.choices.items()), *sets])


def printed_lines(resolved: Resolved) -> list[str]:
    """argv words, then NAME=value lines: one per line, secrets redacted (what --print shows)."""
    return [*shown_argv(resolved), *(f"{k}={v}" for k, v in shown_env(resolved).items())]
