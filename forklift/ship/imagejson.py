"""The JSON of an image archive (OCI index, manifest and config; docker save's manifest.json) as models.

Each file is read only up to MAX_JSON_BYTES and validated by its model before any field is used, so a
wrong shape (a list for an object, a missing digest, a number for a ref) is one line naming the file and
the field. Lists are capped where the format allows more than any real image holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError

from forklift.errors import ForkliftError, validation_line
from forklift.textsafe import terminal

MAX_JSON_BYTES = 4 << 20  # an index, manifest or config is kilobytes
MAX_DESCRIPTORS = 1024  # descriptors an index lists, and index descriptors followed in all: a DAG is walked once
MAX_LAYERS = 1024  # overlayfs stacks at most 500 lower layers; docker images stop at 127
MAX_NESTING = 4  # image indexes pointing at image indexes
MAX_LINE = 300  # characters of a validation problem shown

Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


class _Foreign(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Descriptor(_Foreign):
    mediaType: str = ""
    digest: Digest
    size: int = Field(default=0, ge=0)
    annotations: dict[str, str] | None = None


class Index(_Foreign):
    manifests: list[Descriptor] = Field(max_length=MAX_DESCRIPTORS)


class Manifest(_Foreign):
    mediaType: str = ""
    config: Descriptor
    layers: list[Descriptor] = Field(max_length=MAX_LAYERS)


class RootFS(_Foreign):
    diff_ids: list[Digest] = Field(max_length=MAX_LAYERS)


class ContainerConfig(_Foreign):
    Labels: dict[str, str] | None = None
    Env: list[str] | None = Field(default=None, max_length=4096)


class ImageConfig(_Foreign):
    config: ContainerConfig | None = None
    rootfs: RootFS


class DockerEntry(_Foreign):
    Config: str
    RepoTags: list[str] | None = Field(default=None, max_length=MAX_DESCRIPTORS)
    Layers: list[str] = Field(max_length=MAX_LAYERS)


class DockerManifest(RootModel[list[DockerEntry]]):
    root: list[DockerEntry] = Field(max_length=MAX_DESCRIPTORS)


Model = TypeVar("Model", bound=BaseModel)


def read_model(path: Path, model: type[Model], archive: Path, what: str) -> Model:
    """`path` (at most MAX_JSON_BYTES) as `model`; anything else is one line naming `what` and the field."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_JSON_BYTES + 1)
    if len(data) > MAX_JSON_BYTES:
        raise ForkliftError(f"{archive}: {what} is over {MAX_JSON_BYTES} bytes; not an image index or config")
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        problem = validation_line(exc, top="the document")
        if len(problem) > MAX_LINE:
            problem = problem[:MAX_LINE] + "..."
        raise ForkliftError(f"{archive}: {what}: {terminal(problem)}") from None
