"""forklift.json: what a wheel built by `forklift wheel` carries in its dist-info.

The patched wheel's RECORD lists the patched bytes (so pip's own checks hold), which hides the
upstream bytes verification needs. The stamp keeps them: the upstream sha256 of every file the series
touched (None: the upstream wheel has no such file), beside the pin, the series and the overlay hash.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from forklift.errors import ForkliftError
from forklift.fsio import read_bounded

STAMP = "forklift.json"


class StampedPatch(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    sha256: str


class Stamp(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_: int = Field(default=1, alias="schema")
    pin: dict[str, Any]
    upstream_version: str
    overlay_hash: str
    series: str = Field(description="sha256 of the series' 'DIGEST  NAME' lines (the io.forklift.series label)")
    patches: list[StampedPatch]
    pristine: dict[str, str | None] = Field(description="upstream sha256 of each file the series touched")

    def render(self) -> str:
        return json.dumps(self.model_dump(by_alias=True), indent=2, sort_keys=True) + "\n"


MAX_STAMP_BYTES = 4 << 20  # a digest per file the series changes: kilobytes


def read_stamp(dist_info: Path) -> Stamp | None:
    """The stamp in `dist_info`, None when there is none (an upstream wheel); a broken one is one line."""
    path = dist_info / STAMP
    if not path.is_file():
        return None
    try:
        return Stamp.model_validate_json(read_bounded(path, "forklift stamp", MAX_STAMP_BYTES))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top)"
        raise ForkliftError(f"{path}: not a forklift stamp: {where}: {first['msg']}") from None


def pristine_record(record: dict[str, str | None], stamp: Stamp | None) -> dict[str, str | None]:
    """The upstream wheel's view of the package files: RECORD with the stamp's upstream hashes put back."""
    if stamp is None:
        return record
    merged = dict(record)
    for path, digest in stamp.pristine.items():
        if digest is None:
            merged.pop(path, None)
        else:
            merged[path] = digest
    return merged
