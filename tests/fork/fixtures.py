"""Session fixtures: a throwaway vLLM fork (base = the real 0.32.0 sdist tree) with patch commits.

Branch `patched` carries four commits that all survive a flip to 0.33.0:
  1. scheduler fix (upstream changed scheduler.py: applies at an offset, needs a human look),
  2. a registered environment knob (VLLM_LOG_KV_CACHE_BLOCKS, in the knob registry),
  3. exactly the change upstream made to vllm/assets/audio.py between 0.32.0 and 0.33.0 (retire),
  4. a docstring in vllm/assets/base.py (a file upstream did not touch: applies exactly).
Branch `partly` adds a commit that is partly upstream (the kv_events.py docstring 0.33.0 added, plus
a logger.py comment); branch `blocked` adds to that two that do not apply: a conflict (envs.py lines
0.33.0 removed) and a file 0.33.0 deleted (medusa.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fixtures.pypi import VLLM_032_UPSTREAM
from tests.fork.gitfork import Fork, branch, commit, edit, init_fork

SCHEDULER = "vllm/v1/core/sched/scheduler.py"
ENVS = "vllm/envs.py"
AUDIO = "vllm/assets/audio.py"
ASSETS_BASE = "vllm/assets/base.py"
KV_EVENTS = "vllm/config/kv_events.py"
LOGGER = "vllm/logger.py"
MEDUSA = "vllm/model_executor/models/medusa.py"

FIX_LINE = "if request.is_prefill_chunk or request.use_structured_output:"


@dataclass(frozen=True)
class VllmFork(Fork):
    patched: str  # tip of branch `patched`
    blocked: str  # tip of branch `blocked`
    commits: tuple[str, ...]  # the four commits of `patched`, oldest first


def _envs_knob(tree: Path) -> bytes:
    text = edit(
        tree,
        ENVS,
        "    VLLM_LOG_STATS_INTERVAL: float = 10.0\n",
        "    VLLM_LOG_STATS_INTERVAL: float = 10.0\n    VLLM_LOG_KV_CACHE_BLOCKS: bool = True\n",
    ).decode()
    anchor = "    # Trace function calls\n"
    assert text.count(anchor) == 1
    return text.replace(
        anchor,
        "    # If set to 0, the engine does not log the KV cache block count.\n"
        '    "VLLM_LOG_KV_CACHE_BLOCKS": lambda: bool(\n'
        '        int(os.getenv("VLLM_LOG_KV_CACHE_BLOCKS", "1"))\n'
        "    ),\n" + anchor,
    ).encode()


@pytest.fixture(scope="session")
def vllm_fork(vllm_032_tree, vllm_033_tree, tmp_path_factory) -> VllmFork:
    tree = vllm_032_tree.path
    new = vllm_033_tree.path
    git, base = init_fork(tree, tmp_path_factory.mktemp("fork") / "vllm.git", "v0.32.0")
    c1 = commit(
        git,
        base,
        {
            SCHEDULER: edit(
                tree,
                SCHEDULER,
                "            if request.is_prefill_chunk:\n                # Ignore draft tokens for prefill chunks.\n",
                f"            {FIX_LINE}\n"
                "                # Ignore draft tokens for prefill chunks and for\n"
                "                # grammar-constrained requests.\n",
            )
        },
        "Clear speculative drafts for requests with structured outputs\n\n"
        "Grammar-constrained requests take the plain target-token path.\n\n"
        "Origin: vendor\nForwarded: not-yet\nKind: fix\n"
        "Retires-When: upstream stops drafting for structured-output requests\n",
    )
    envs = _envs_knob(tree)
    c2 = commit(git, c1, {ENVS: envs}, "Register the VLLM_LOG_KV_CACHE_BLOCKS knob\n\nOrigin: vendor\nKind: feature\n")
    c3 = commit(
        git,
        c2,
        {AUDIO: (new / AUDIO).read_bytes()},
        "Add the azacinto_foscolo audio asset\n\nOrigin: upstream\nKind: backport\n",
    )
    c4 = commit(
        git,
        c3,
        {
            ASSETS_BASE: edit(
                tree,
                ASSETS_BASE,
                '    """Get the path to the cache for storing downloaded assets."""\n',
                '    """Get the path to the cache for storing downloaded assets.\n\n'
                '    Created on first use.\n    """\n',
            )
        },
        "Document that the assets cache folder is created on first use\n\nKind: docs\n",
    )
    branch(git, "patched", c4)
    c5 = commit(
        git,
        c4,
        {
            KV_EVENTS: (new / KV_EVENTS).read_bytes(),
            LOGGER: edit(
                tree,
                LOGGER,
                '_DATE_FORMAT = "%m-%d %H:%M:%S"\n',
                '# Month-day and time, as every vLLM log line shows it.\n_DATE_FORMAT = "%m-%d %H:%M:%S"\n',
            ),
        },
        "Document the replay socket high-water mark and the log date format\n\nKind: docs\n",
    )
    branch(git, "partly", c5)
    c6 = commit(
        git,
        c5,
        {
            ENVS: envs.replace(
                b"    VLLM_USE_RAY_COMPILED_DAG_OVERLAP_COMM: bool = False\n",
                b"    VLLM_USE_RAY_COMPILED_DAG_OVERLAP_COMM: bool = True\n",
            )
        },
        "Overlap communication in Ray compiled graphs by default\n\nKind: tuning\n",
    )
    c7 = commit(
        git,
        c6,
        {
            MEDUSA: edit(
                tree,
                MEDUSA,
                "class ResidualBlock(nn.Module):\n",
                'class ResidualBlock(nn.Module):\n    """One Medusa head block."""\n\n',
            )
        },
        "Document the Medusa residual block\n\nKind: docs\n",
    )
    branch(git, "blocked", c7)
    return VllmFork(git=git, base=base, tag="v0.32.0", patched=c4, blocked=c7, commits=(c1, c2, c3, c4))


VLLM_032_TOML = f"""# test distribution: vLLM 0.32.0 from PyPI
[engine]
kind = "vllm"

{VLLM_032_UPSTREAM}
[series]
dir = "patches"
patches_md = "PATCHES.md"
"""


@pytest.fixture
def distribution(tmp_path) -> Path:
    """An empty distribution folder pinned to vllm 0.32.0 (export fills its series)."""
    (tmp_path / "forklift.toml").write_text(VLLM_032_TOML, encoding="utf-8")
    (tmp_path / "patches").mkdir()
    return tmp_path
