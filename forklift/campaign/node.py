"""One campaign cell on a cluster node: a local cell's own code, in a scratch folder, every file sent as written.

The head (campaign.cluster) runs `cell_on_node` as a Ray generator task; this module needs no Ray.
The node reads the same campaign.toml (every box keeps the campaign at the same path), proves its
own install of the cell's build (`verify` of the installed engine against the build's series)
and refuses unless its version and overlay hash are the head's. The cell then runs exactly as a
local one, into a scratch folder; each receipt is yielded as soon as it is written (rewritten:
yielded again), the cell's campaign-cell receipt last, so the head holds whatever was measured
before a node died and holds a finished cell only once all of it arrived.
"""

from __future__ import annotations

import os
import queue
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from forklift.campaign.builds import Build, verify_build
from forklift.campaign.plan import Cell, make_campaign_plan
from forklift.campaign.run import CELL_KIND, Runner
from forklift.campaign.schema import CampaignFile, load_campaign_file
from forklift.config import Config, load_config
from forklift.errors import ForkliftError
from forklift.launch.pidfiles import listed, stop_running
from forklift.launch.resolve import DEFAULT_PORT
from forklift.launch.supervise import terminate_group

PORT_OFFSET = "FORKLIFT_PORT_OFFSET"  # set in a node's `ray start` environment when nodes share a host
POLL_S = 0.2  # how often the scratch folder is looked at for new or rewritten files
CLEANUP_S = 120.0  # how long a cancelled cell gets to wind down once its engines are stopped


@dataclass(frozen=True)
class CellRequest:
    """What the head sends: which cell, and what the head proved about the cell's build."""

    campaign: str  # campaign.toml, absolute
    key: str
    repeats: int  # the plan's repeats the cell belongs to (boots a target MDE added raise it)
    version: str | None
    overlay_hash: str | None
    node: dict[str, str]  # where the task runs: id, address, box, as the head names it


@dataclass(frozen=True)
class Message:
    """One thing the node sends back: a line to print, a file (receipts or logs), or why it stopped."""

    kind: Literal["started", "say", "file", "refused", "failed"]
    text: str = ""
    folder: Literal["receipts", "logs"] = "receipts"
    path: str = ""  # relative to the cell's receipts folder, or to the logs folder
    data: bytes = b""


def node_name(node: dict[str, str]) -> str:
    return f"node {node.get('address', '?')} ({node.get('id', '?')[:12]}, {socket.gethostname()})"


def find_cell(cells: list[Cell], key: str, campaign: str) -> Cell:
    for cell in cells:
        if cell.key == key:
            return cell
    raise ForkliftError(f"{campaign}: no cell {key!r} in the campaign as this node reads it (is it the head's file?)")


class _Watch:
    """Files of a folder not yet sent, or rewritten since (receipts are written whole, by rename)."""

    def __init__(self, root: Path, folder: Literal["receipts", "logs"]) -> None:
        self.root, self.folder = root, folder
        self.seen: dict[Path, tuple[int, int]] = {}

    def new(self, hold_back: str | None = None) -> Iterator[Message]:
        if not self.root.is_dir():
            return
        for path in sorted(p for p in self.root.rglob("*") if p.is_file()):
            # a dot-file is write_atomic's temp copy: the cell's thread renames it away at any moment (a stat of
            # it raced that rename once), and the whole file is sent under its own name once it is there
            if path.name.startswith(".") or (hold_back and hold_back in path.name):
                continue
            stat = path.stat()
            if self.seen.get(path) == (stat.st_mtime_ns, stat.st_size):
                continue
            self.seen[path] = (stat.st_mtime_ns, stat.st_size)
            yield Message("file", folder=self.folder, path=str(path.relative_to(self.root)), data=path.read_bytes())


def node_config(config: Config) -> Config:
    """The config with every profile's port moved by this node's FORKLIFT_PORT_OFFSET (nodes sharing one host).

    Several Ray nodes on one host (one per GPU) would boot their cells' engines on the same port."""
    raw = os.environ.get(PORT_OFFSET, "0")
    if not raw.isdigit():
        raise ForkliftError(f"{PORT_OFFSET}={raw!r} on this node: expected a whole number of ports")
    offset = int(raw)
    if not offset:
        return config
    profiles = {
        name: profile.model_copy(update={"port": (profile.port or DEFAULT_PORT) + offset})
        if profile.port is not None or profile.extends is None
        else profile
        for name, profile in config.data.profiles.items()
    }
    return replace(config, data=config.data.model_copy(update={"profiles": profiles}))


def _stop_orphans(say: queue.Queue[str]) -> None:
    """Engines whose forklift died (a node of this host lost mid-cell) hold ports and memory: stop them, by pid."""
    for entry in listed():
        if not entry.supervisor_running() and entry.engine_running():
            stop_running(entry)
            say.put(f"stopped an engine whose forklift died (pid {entry.server}, port {entry.port})")


def _stop_own_engines() -> None:
    """The engines this process launched (the registry names their supervisor), stopped by pid."""
    for entry in listed():
        if entry.supervisor == os.getpid():
            terminate_group(entry.server, entry.engine_running)


def cell_on_node(request: CellRequest) -> Iterator[Message]:
    """Run one cell here and yield what it prints and writes; the campaign-cell receipt comes last."""
    where = node_name(request.node)
    campaign = load_campaign_file(Path(request.campaign))
    campaign = campaign.model_copy(update={"repeats": request.repeats})
    try:
        config = node_config(load_config(campaign.at(campaign.config)))
    except ForkliftError as exc:
        yield Message("refused", f"{where}: {exc}")
        return
    cell = find_cell(make_campaign_plan(campaign, config).cells, request.key, request.campaign)
    try:
        build = verify_build(cell.build, campaign.builds[cell.build], campaign, config)
    except ForkliftError as exc:
        yield Message("refused", f"{where}: build {cell.build}: {str(exc).removeprefix(f'build {cell.build}: ')}")
        return
    for what, mine, head in (
        ("version", build.version, request.version),
        ("overlay", build.overlay_hash, request.overlay_hash),
    ):
        if mine != head:
            yield Message("refused", f"{where}: build {build.name}: engine {what} {mine} is not the head's {head}")
            return
    scratch = Path(tempfile.mkdtemp(prefix=f"forklift-{request.key}-"))
    try:
        yield from _run_here(request, cell, build, campaign, config, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_here(
    request: CellRequest, cell: Cell, build: Build, campaign: CampaignFile, config: Config, scratch: Path
) -> Iterator[Message]:
    said: queue.Queue[str] = queue.Queue()
    here = campaign.model_copy(update={"receipts": str(scratch / "receipts"), "logs": str(scratch / "logs")})
    plan = make_campaign_plan(here, config)
    runner = Runner(here, config, {build.name: build}, plan, say=said.put, node=request.node)
    _stop_orphans(said)
    failure: list[str] = []

    def run() -> None:
        try:
            runner.run_cell(cell)
        except ForkliftError as exc:
            failure.append(str(exc))
        except Exception as exc:  # a bug must reach the head as one line, not die with the thread
            failure.append(f"{request.key}: {type(exc).__name__}: {exc}")

    receipts, logs = _Watch(runner.receipts / cell.key, "receipts"), _Watch(runner.logs, "logs")
    worker = threading.Thread(target=run, name=f"cell {request.key}", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(POLL_S)
            while not said.empty():
                yield Message("say", said.get())
            yield from receipts.new(hold_back=CELL_KIND)
    except (KeyboardInterrupt, GeneratorExit):  # cancelled by the head: its engines go first, by pid
        _stop_own_engines()
        worker.join(CLEANUP_S)
        raise
    while not said.empty():
        yield Message("say", said.get())
    yield from logs.new()
    yield from receipts.new()
    if failure:
        yield Message("failed", failure[0])
