"""A campaign across a Ray cluster: every cell a Ray task on a node with its box's resources; the head keeps the receipts.

The cluster is Ray's (`ray start --head` / `ray start --address`): forklift connects to it
(--ray ADDRESS or RAY_ADDRESS), submits the unfinished cells in the campaign's order and lets
Ray place them. Each task streams back what its cell writes (campaign.node), and only the head
writes the campaign's folder, so resuming is as a local campaign resumes. A node lost mid-cell:
its partial cell is moved aside and the cell submitted again (Ray places it on a live node with
the same resources), or it is reported as not run when no node has them. Ctrl-C cancels every
task; each stops the engines it started before it ends, and the head waits for that.
Importing this module needs no Ray; running a campaign through it does (`forklift[ray]`).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from forklift.campaign.node import CellRequest, Message, cell_on_node, node_name
from forklift.campaign.plan import Cell, Slot
from forklift.campaign.run import Runner, finished, set_aside
from forklift.campaign.schema import BoxSpec, CampaignFile
from forklift.errors import ConfigError, ForkliftError, UsageError
from forklift.fsio import write_atomic

ATTEMPTS = 3  # a cell whose node is lost this many times is reported as not run
WAIT_S = 1.0  # ray.wait's timeout, so Ctrl-C on the head is seen within a second
CANCEL_WAIT_S = 180.0  # how long cancelled tasks get to stop their engines before the head leaves

Execute = Callable[[Runner, list[Cell]], int]


def ray_executor(campaign: CampaignFile, address: str | None) -> Execute:
    """The cell runner for Runner.execute: on the cluster at `address` (else RAY_ADDRESS)."""
    address = address or os.environ.get("RAY_ADDRESS")
    if not address:
        raise ConfigError(f'{campaign.path}: executor = "ray": name the cluster with --ray ADDRESS or RAY_ADDRESS')
    try:
        import ray  # noqa: F401
    except ImportError:
        raise UsageError(
            "a campaign on a Ray cluster needs Ray here and on every node: pip install 'forklift[ray]'"
        ) from None
    return partial(run_on_cluster, address)


def towards(address: str) -> str | None:
    """This box's own address on the route to the cluster (a UDP connect sends nothing), for ray.init.

    Left to itself Ray picks the address towards the internet, which on a box with several interfaces
    is not the one the cluster reaches it by (a loopback cluster is then joined through another)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or address.startswith("ray://"):
        return None  # "auto" or a Ray Client address: Ray finds its own way
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((host, int(port)))
        except OSError as exc:
            raise ForkliftError(f"Ray cluster {address}: no route to it from here: {exc}") from None
        return str(probe.getsockname()[0])


def connect(address: str) -> None:
    import ray

    if ray.is_initialized():
        return
    here = towards(address)
    try:
        ray.init(
            address=address,
            log_to_driver=False,  # each cell's lines come back through its task, prefixed with its key
            logging_level="WARNING",
            **({"_node_ip_address": here} if here else {}),
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ForkliftError(f"Ray cluster {address}: cannot connect: {exc}") from None


def demand(campaign: CampaignFile, box: str | None) -> BoxSpec:
    return campaign.boxes[box] if box else BoxSpec()


def lacking(spec: BoxSpec, nodes: list[dict[str, Any]]) -> str | None:
    """Why no live node can take a cell of this box (Ray would hold it forever), else None."""
    wanted = {"CPU": spec.num_cpus, "GPU": spec.num_gpus, **spec.resources}
    wanted = {name: amount for name, amount in wanted.items() if amount > 0}
    alive = [node.get("Resources", {}) for node in nodes if node.get("Alive")]
    if any(all(have.get(name, 0) >= amount for name, amount in wanted.items()) for have in alive):
        return None
    for name, amount in wanted.items():
        if not any(have.get(name, 0) >= amount for have in alive):
            return f"no node with resource {name} (>= {amount:g})"
    return f"no node with all of {', '.join(f'{n}={a:g}' for n, a in wanted.items())}"


def cell_task(request: CellRequest) -> Iterator[Message]:
    """The Ray task's body: say which node it is, then run the cell there (campaign.node)."""
    import ray

    node = {"id": ray.get_runtime_context().get_node_id(), "address": ray.util.get_node_ip_address(), **request.node}
    request = replace(request, node=node)
    yield Message("started", node_name(node))
    yield from cell_on_node(request)


@dataclass
class _Running:
    cell: Cell
    attempt: int
    where: str = "a node not yet known"


def _target(runner: Runner, running: _Running, message: Message) -> Path:
    """Where a sent file lands on the head; a path out of its folder is refused (the node is another box)."""
    relative = PurePosixPath(message.path)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise ForkliftError(f"{running.cell.key}: {running.where} sent a file outside its folder: {message.path!r}")
    root = runner.receipts / running.cell.key if message.folder == "receipts" else runner.logs
    return root / relative


def request_for(runner: Runner, cell: Cell) -> CellRequest:
    build = runner.builds[cell.build]
    return CellRequest(
        campaign=str(runner.campaign.path.resolve()),
        key=cell.key,
        repeats=max(runner.campaign.repeats, cell.repeat if isinstance(cell, Slot) else 1),
        version=build.version,
        overlay_hash=build.overlay_hash,
        node={"box": cell.box} if cell.box else {},
    )


def run_on_cluster(address: str, runner: Runner, cells: list[Cell]) -> int:
    """Every cell a task, submitted in order; each message written or printed as it comes; returns cells run."""
    import ray
    from ray.exceptions import RayError, RayTaskError

    connect(address)
    task = ray.remote(max_retries=0)(cell_task)  # a lost node is retried here: its partial cell is set aside first
    active: dict[Any, _Running] = {}
    not_run: set[str] = set()

    def submit(cell: Cell, attempt: int) -> None:
        spec = demand(runner.campaign, cell.box)
        why = lacking(spec, ray.nodes())
        if why:
            runner.say(f"{cell.key}: not run: {why}")
            not_run.add(cell.key)
            return
        options = {"num_cpus": spec.num_cpus, "num_gpus": spec.num_gpus, "resources": dict(spec.resources)}
        active[task.options(name=f"forklift {cell.key}", **options).remote(request_for(runner, cell))] = _Running(
            cell, attempt
        )

    for cell in cells:
        submit(cell, 1)
    try:
        while active:
            ready, _ = ray.wait(list(active), num_returns=1, timeout=WAIT_S)
            for stream in ready:
                running = active[stream]
                try:
                    message = ray.get(next(stream))
                except StopIteration:
                    del active[stream]
                    continue
                except RayTaskError as exc:  # the node's own code failed: one line, the campaign stops
                    raise ForkliftError(f"{running.cell.key}: on {running.where}: {_last_line(exc)}") from None
                except RayError as exc:  # the node (or its worker) died mid-cell
                    del active[stream]
                    if _lost(runner, running, exc):
                        submit(running.cell, running.attempt + 1)
                    elif not finished(runner.receipts / running.cell.key):
                        not_run.add(running.cell.key)
                    continue
                _receive(runner, running, message)
    finally:
        if active:
            _cancel(active)
    return len(cells) - len(not_run)


def _receive(runner: Runner, running: _Running, message: Message) -> None:
    if message.kind == "started":
        running.where = message.text
        runner.say(f"{running.cell.key}: on {message.text}")
    elif message.kind == "say":
        runner.say(message.text)
    elif message.kind == "file":
        write_atomic(_target(runner, running, message), message.data)
    else:  # refused (not the head's engine) or failed (as a local cell fails the campaign)
        raise ForkliftError(message.text)


def _lost(runner: Runner, running: _Running, exc: Exception) -> bool:
    """Say what was lost and set the partial cell aside; True when the cell should be submitted again."""
    key = running.cell.key
    runner.say(f"{key}: lost on {running.where} ({type(exc).__name__}); what it sent is kept")
    if finished(runner.receipts / key):
        return False  # every file of the cell had arrived
    moved = set_aside(runner.receipts, key)
    if moved:
        runner.say(f"{key}: unfinished cell moved aside to {moved}")
    if running.attempt >= ATTEMPTS:
        runner.say(f"{key}: not run: its node was lost {running.attempt} times")
        return False
    return True


def _cancel(active: dict[Any, _Running]) -> None:
    """Cancel every task (a KeyboardInterrupt in each: it stops its engines by pid) and wait for them to end.

    What a cancelled cell still sends is dropped: the head writes nothing more, and its folder is set
    aside when the campaign is resumed."""
    import ray
    from ray.exceptions import RayError

    for stream in active:
        ray.cancel(stream)
    deadline = time.monotonic() + CANCEL_WAIT_S
    while active and time.monotonic() < deadline:
        ready, _ = ray.wait(list(active), num_returns=1, timeout=WAIT_S)
        for stream in ready:
            try:
                ray.get(next(stream))
            except (StopIteration, RayError):
                active.pop(stream, None)


def _last_line(exc: Exception) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(exc).__name__
