"""The typed schema of forklift.toml.

Every model forbids unknown keys: a typo in a key is an error naming the key,
never a setting silently ignored.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from forklift.config.profile import Profile

Applier = Literal["gnu-patch", "git-apply"]  # whose rules every application of the series follows, at fuzz 0
Unlisted = Literal["warn", "error"]  # what a patch file the series does not list is

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="64 lowercase hex digits")]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExtractLimits(Strict):
    """How far one archive may expand (`[upstream.extract]`); FORKLIFT_EXTRACT_MAX_* variables override these."""

    max_bytes: int | None = Field(default=None, gt=0, description="total uncompressed bytes (default 2 GiB)")
    max_members: int | None = Field(default=None, gt=0, description="members in the archive (default 200000)")
    max_ratio: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, description="uncompressed / compressed size (default 200)"
    )


class PypiPin(Strict):
    """An artifact (sdist or wheel) of a package on a PEP 691 simple index."""

    source: Literal["pypi"]
    package: str
    version: str
    filename: str | None = Field(default=None, description="which file of the release; default: the sdist")
    sha256: Sha256
    extract: ExtractLimits | None = None


class GitPin(Strict):
    """A tag of a git repository, bound to the commit it must resolve to."""

    source: Literal["git"]
    url: str
    tag: str
    commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$", description="a full 40-hex commit id")]


class PathPin(Strict):
    """A local tarball (sha256 of the file) or directory (sha256 of its listing, see source.hashing)."""

    source: Literal["path"]
    path: str
    sha256: Sha256
    extract: ExtractLimits | None = None


Pin = Annotated[PypiPin | GitPin | PathPin, Field(discriminator="source")]


class EngineConfig(Strict):
    kind: Literal["vllm", "generic"] = "vllm"


class SeriesConfig(Strict):
    dir: str = "patches"
    contract: list[str] = Field(
        default_factory=list, description="patches that must also apply standalone on the pristine tree"
    )
    patches_md: str | None = Field(
        default="PATCHES.md", description="generated patch table that check keeps in sync; '' for none"
    )
    unlisted: Unlisted = Field(
        default="warn", description="a patch file in the folder that the series does not list: a note, or an error"
    )
    root: str = Field(default="", description="tree folder the patches are written against (like patch -d)")
    digests: str | None = Field(
        default=None, description="sha256sum file the patch files are held to (default: SHA256SUMS beside series)"
    )
    applier: Applier = Field(
        default="gnu-patch",
        description="whose rules every command applies patches by at fuzz 0: GNU patch (quilt, dpkg) or git apply",
    )
    lint: bool = Field(default=False, description="check also fails on `forklift lint` findings (DEP-3, leaks)")

    @field_validator("root")
    @classmethod
    def _relative_folder(cls, root: str) -> str:
        return relative_folder(root)

    @field_validator("contract")
    @classmethod
    def _no_paths(cls, names: list[str]) -> list[str]:
        for name in names:
            if name.startswith("/") or ".." in name.split("/") or not re.fullmatch(r"[^\s]+", name):
                raise ValueError(f"{name!r} must be a series entry (a path inside the series folder)")
        return names


def relative_folder(path: str) -> str:
    """A folder inside the tree, written relative ('vllm', 'src/pkg'); '' for the tree itself."""
    parts = PurePosixPath(path).parts
    if path.startswith("/") or "\\" in path or ".." in parts or "." in path.split("/"):
        raise ValueError(f"{path!r} must be a relative folder inside the tree (no '..', '.' or leading '/')")
    return "/".join(parts)


class OverlayConfig(Strict):
    """Whole files copied over the tree after the series (new files or replacements), below [series] root."""

    dir: str = Field(description="folder of files mirroring the tree, relative to forklift.toml")


class CorpusConfig(Strict):
    """A perplexity corpus: a user file pinned by sha256, so a corpus edited by one byte is refused by name."""

    path: str = Field(description="text or JSONL file, relative to forklift.toml")
    sha256: Sha256
    format: Literal["text", "jsonl"] | None = Field(default=None, description="default: jsonl for *.jsonl, else text")
    field: str = Field(default="text", description="JSONL: the key that holds each document's text")


class QualityConfig(Strict):
    corpora: dict[str, CorpusConfig] = Field(default_factory=dict, description="`forklift quality --corpus NAME`")


class ImageConfig(Strict):
    """`forklift image --print`: the image the patched wheel is installed into."""

    base: str | None = Field(
        default=None,
        description="FROM of the Containerfile (default: the engine's serving image of the pinned version)",
    )


class ForkliftToml(Strict):
    engine: EngineConfig = Field(default_factory=EngineConfig)
    upstream: Pin
    series: SeriesConfig = Field(default_factory=SeriesConfig)
    overlay: OverlayConfig | None = None
    profiles: dict[str, Profile] = Field(default_factory=dict, description="launch profiles (forklift launch NAME)")
    quality: QualityConfig = Field(default_factory=QualityConfig)
    image: ImageConfig = Field(default_factory=ImageConfig)
