"""A series cut at test time from real upstream changes between the vLLM 0.31.0, 0.32.0 and 0.33.0 sdists.

Nothing here is third-party source: each patch is made from the cached sdist trees when the fixture runs.
The distribution is pinned to 0.31.0 and flipped to 0.33.0. One patch per verdict, in this order:

  backport-edited   upstream's 0.32.0 change to pooler.py, backported; 0.33.0 edited one of its lines
  partly-landed     upstream's 0.32.0 change to engine/protocol.py (6 hunks): 5 are in 0.33.0 as they were,
                    the 6th was edited by 0.33.0 (start_profile gained profiler_kwargs)
  chain-a           changes ec_connector/cpu/common.py's `loads` field (0.33.0 rewrote it) and creates a file
  chain-b           builds on chain-a's new field, and edits the file chain-a creates
  chain-c           builds on chain-b's line
  look-enclosing    edits create_ec_shared_region, whose body 0.33.0 changed elsewhere, and calls the helper
                    0.33.0 removed from that file
  new-file-rewrote  creates vllm/parser/mimo.py as 0.32.0 shipped it; 0.33.0 ships its own version
  medusa            edits medusa.py, which 0.33.0 deleted
  routers-upstream  0.33.0's whole change to api_server/routers.py
  partly-upstream   0.33.0's change to one pooler.py docstring line, plus a line of our own in assets/base.py
  fuzz              edits a comment of ec_connector/cpu/common.py two lines below a line 0.33.0 changed
  exact             a docstring in vllm/assets/image.py (a file no release touched)
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from forklift.config.schema import PypiPin
from forklift.series.render import file_diff
from tests.fixtures.pypi import VLLM_032, VLLM_033, materialize_or_skip

VLLM_031 = PypiPin(
    source="pypi",
    package="vllm",
    version="0.31.0",
    sha256="dde46f1efbe846e5bd0c5c4ec6ec71842c42254c7ff3d9bebb2a57028715d380",
)

POOLER = "vllm/config/pooler.py"
PROTOCOL = "vllm/engine/protocol.py"
EC_COMMON = "vllm/distributed/ec_transfer/ec_connector/cpu/common.py"
EC_VENDOR = "vllm/distributed/ec_transfer/ec_connector/cpu/vendor_pins.py"
MIMO = "vllm/parser/mimo.py"
MEDUSA = "vllm/model_executor/models/medusa.py"
ROUTERS = "vllm/entrypoints/launchers/api_server/routers.py"
ASSETS_BASE = "vllm/assets/base.py"
IMAGE = "vllm/assets/image.py"

TOML_031 = f"""# test distribution: vLLM 0.31.0 from PyPI
[engine]
kind = "vllm"

[upstream]
source = "pypi"
package = "vllm"
version = "0.31.0"
sha256 = "{VLLM_031.sha256}"

[series]
dir = "patches"
"""

LOADS = "    loads: dict[str, tuple[int, list[int]]] = field(default_factory=dict)\n"
PINS = "    vendor_pins: dict[str, int] = field(default_factory=dict)\n"
PINS_B = "    vendor_pin_limit: int = 64\n"
PINS_C = "    vendor_pin_floor: int = 1\n"
LANDS = "    # once its copy lands. The id is minted per dispatch, so two loads of the\n"
LANDS_FUZZ = "    # once its copy lands (or its load times out). The id is minted per dispatch, so two loads of the\n"
RAISE = '        raise ValueError("ec_cpu_bytes must be specified in ec_connector_extra_config")\n'
RAISE_LOOK = (
    "        raise ValueError(\n"
    '            "ec_cpu_bytes must be set in ec_connector_extra_config "\n'
    '            f"(hidden dim {_get_encoder_cache_hidden_dim(vllm_config)})"\n'
    "        )\n"
)


@dataclass(frozen=True)
class RealSeries:
    dist: Path
    names: tuple[str, ...]  # in series order, as the module docstring lists them


def replaced(text: bytes, old: str, new: str) -> bytes:
    """`text` with the one occurrence of `old` replaced (the fixture fails loudly if upstream moved it)."""
    assert text.count(old.encode()) == 1, f"expected exactly one {old!r}"
    return text.replace(old.encode(), new.encode())


def header(subject: str) -> str:
    return f"Description: {subject}\nAuthor: Test <test@example.com>\n---\n"


@pytest.fixture(scope="session")
def trees():
    return materialize_or_skip(VLLM_031).path, materialize_or_skip(VLLM_032).path, materialize_or_skip(VLLM_033).path


@pytest.fixture(scope="module")
def real_series(trees, tmp_path_factory) -> RealSeries:
    """Built once per test module; a test that edits it works on a copy (copy_series)."""
    return build_series(trees, tmp_path_factory.mktemp("real-series"))


def copy_series(series: RealSeries, where: Path) -> RealSeries:
    shutil.copytree(series.dist, where / "dist", ignore=shutil.ignore_patterns("receipts"))
    return RealSeries(dist=where / "dist", names=series.names)


def build_series(trees, tmp_path: Path) -> RealSeries:
    v31, v32, v33 = trees

    def read(root: Path, path: str) -> bytes:
        return (root / path).read_bytes()

    def upstream(path: str, before: Path, after: Path) -> str:
        return file_diff(path, read(before, path), read(after, path))

    pooler = read(v31, POOLER)
    ec = read(v31, EC_COMMON)
    chain_a = replaced(ec, LOADS, LOADS + PINS)
    chain_b = replaced(chain_a, PINS, PINS + PINS_B)
    chain_c = replaced(chain_b, PINS_B, PINS_B + PINS_C)
    vendor = b'"""Vendor pin bookkeeping for the CPU EC connector."""\n\nMAX_PINS = 64\n'
    looked = replaced(chain_c, RAISE, RAISE_LOOK)
    partly_pooler = replaced(
        pooler,
        "    errors. Defaults to False.\n",
        "    errors. Multimodal inputs are not supported. Defaults to False.\n",
    )
    patches = {
        "0001-backport-edited.patch": upstream(POOLER, v31, v32),
        "0002-partly-landed.patch": upstream(PROTOCOL, v31, v32),
        "0003-chain-a.patch": file_diff(EC_COMMON, ec, chain_a) + file_diff(EC_VENDOR, None, vendor),
        "0004-chain-b.patch": file_diff(EC_COMMON, chain_a, chain_b)
        + file_diff(EC_VENDOR, vendor, vendor.replace(b"= 64", b"= 128")),
        "0005-chain-c.patch": file_diff(EC_COMMON, chain_b, chain_c),
        "0006-look-enclosing.patch": file_diff(EC_COMMON, chain_c, looked),
        "0007-new-file-rewrote.patch": file_diff(MIMO, None, read(v32, MIMO)),
        "0008-medusa.patch": file_diff(
            MEDUSA,
            read(v31, MEDUSA),
            replaced(
                read(v31, MEDUSA),
                "class ResidualBlock(nn.Module):\n",
                'class ResidualBlock(nn.Module):\n    """One Medusa head block."""\n\n',
            ),
        ),
        "0009-routers-upstream.patch": upstream(ROUTERS, v31, v33),
        "0010-partly-upstream.patch": file_diff(POOLER, pooler, partly_pooler)
        + file_diff(
            ASSETS_BASE, read(v31, ASSETS_BASE), read(v31, ASSETS_BASE) + b"# vendor: assets are fetched lazily\n"
        ),
        "0011-fuzz.patch": file_diff(EC_COMMON, looked, replaced(looked, LANDS, LANDS_FUZZ)),
        "0012-exact.patch": file_diff(
            IMAGE, read(v31, IMAGE), read(v31, IMAGE) + b"# vendor: image assets are cached\n"
        ),
    }
    dist = tmp_path / "dist"
    (dist / "patches").mkdir(parents=True)
    (dist / "forklift.toml").write_text(TOML_031, encoding="utf-8")
    for name, diff in patches.items():
        (dist / "patches" / name).write_text(header(name[5:-6].replace("-", " ")) + diff, encoding="utf-8")
    (dist / "patches" / "series").write_text("".join(f"{name}\n" for name in patches), encoding="utf-8")
    return RealSeries(dist=dist, names=tuple(patches))
