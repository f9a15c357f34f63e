"""`forklift verify --image`: the engine in an image checked as `forklift verify` checks an install, and its labels."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forklift.config import Config
from forklift.engines import engine_adapter
from forklift.installed.package import locate
from forklift.installed.verify import Verification, installed_overlay_hash, verify_installed
from forklift.series.gate import configured_series
from forklift.ship.image import Image, unpacked_engine
from forklift.ship.labels import image_labels


@dataclass(frozen=True)
class ImageCheck:
    image: Image
    site: str  # where the engine is installed in the image
    interpreter: str | None  # the image's python that imports it from there
    state: Verification
    expected: dict[str, str]  # the labels the engine found in the image should carry
    label_problems: list[str]

    @property
    def ok(self) -> bool:
        return self.state.ok and not self.label_problems

    def summary(self) -> str:
        """One line: the first file or patch problem, else the first label problem."""
        if not self.state.ok:
            return f"the engine in /{self.site}: {self.state.summary()}"
        more = f" (+{len(self.label_problems) - 1} more)" if len(self.label_problems) > 1 else ""
        return self.label_problems[0] + more if self.label_problems else "ok"


def verify_image(config: Config, archive: Path, tag: str | None = None, trimmed: bool = False) -> ImageCheck:
    """Unpack the engine from `archive` (offline), verify it against the series, compare the labels."""
    engine = engine_adapter(config.data.engine.kind)
    series = configured_series(config)
    with unpacked_engine(archive, engine.package, tag) as unpacked:
        package = locate(unpacked.site, engine.package, engine.serve_script)
        state = verify_installed(package, series, trimmed=trimmed)
        overlay = installed_overlay_hash(package, series) or "none (the series is not applied)"
        version = package.version or "unknown"
        stamp = package.stamp
    expected = image_labels(config.data.upstream, version, overlay, series)
    problems = []
    if stamp is not None and stamp.overlay_hash != overlay:
        problems.append(
            f"{package.dist_info.name}/forklift.json names overlay {stamp.overlay_hash}, the files {overlay}"
        )
    labels = unpacked.image.labels
    for key, want in expected.items():
        if key not in labels:
            problems.append(f"label {key} missing (the image's engine has {want})")
        elif labels[key] != want:
            problems.append(f"label {key} is {labels[key]!r}, the image's engine has {want!r}")
    return ImageCheck(unpacked.image, unpacked.site_in_image, unpacked.interpreter, state, expected, problems)
