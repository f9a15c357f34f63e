"""`forklift image --print`: a Containerfile that installs the patched wheel over the upstream serving image.

Building it is the user's own tool's job (podman, docker, buildah); forklift runs no daemon. The labels
are the ones `forklift verify --image` holds the built image to.

A Containerfile is code, so it is written from checked values only (forklift.ship.names): the FROM image
against the OCI reference grammar, the package, version and wheel file name against theirs, every label value
against a plain character set; COPY and RUN take the JSON-array (exec) form, so no shell reads them.
"""

from __future__ import annotations

import json
import re

from forklift.config import Config
from forklift.engines import engine_adapter
from forklift.errors import ConfigError
from forklift.series.gate import configured_series
from forklift.ship import names
from forklift.ship.labels import OVERLAY, image_labels
from forklift.ship.wheel import WheelPlan

# What a label value may hold: a version, a hash, a pin line. No quote, backslash, '$' (a builder expands it),
# space or control character.
LABEL_VALUE = re.compile(r"[A-Za-z0-9._:+=@/!-]+", re.ASCII)
LABEL_KEY = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)*", re.ASCII)


def base_image(config: Config, plan: WheelPlan, given: str | None = None) -> str:
    """FROM: --from, else [image] base, else the engine's serving image of the pinned version; an image reference."""
    where = str(config.path)
    field = "--from" if given else "image.base" if config.data.image.base else f"{config.data.engine.kind}'s image"
    template = given or config.data.image.base or engine_adapter(config.data.engine.kind).serving_image
    if not template:
        raise ConfigError(f"{where}: no serving image is known for this engine; set [image] base")
    version = names.version(plan.upstream_version, "the wheel's Version", where)
    return names.image_reference(template.replace("{version}", version), field, where)


def containerfile(config: Config, plan: WheelPlan, base: str) -> str:
    """The Containerfile text: FROM base, the wheel installed without dependencies, the labels."""
    labels = image_labels(plan.pin, plan.version, plan.stamp.overlay_hash, configured_series(config))
    return render(
        str(config.path),
        base,
        plan.pin.package,
        plan.upstream_version,
        plan.filename,
        labels,
        len(plan.stamp.patches),
    )


def render(where: str, base: str, package: str, version: str, wheel: str, labels: dict[str, str], patches: int) -> str:
    """The Containerfile from its values, each checked against its grammar first (one line naming it, else)."""
    base = names.image_reference(base, "FROM", where)
    package = names.package_name(package, "upstream.package", where)
    version = names.version(version, "the wheel's Version", where)
    wheel = names.wheel_filename(wheel, "the wheel's file name", where)
    for key, value in labels.items():
        if LABEL_VALUE.fullmatch(value) is None or LABEL_KEY.fullmatch(key) is None:
            raise ConfigError(f"{where}: label {key} = {value[:200]!r}: holds a character a label is not written with")
    target = f"/tmp/{wheel}"
    install = ["python3", "-m", "pip", "install", "--no-deps", "--no-cache-dir", "--force-reinstall", target]
    label_lines = " \\\n      ".join(f"{key}={json.dumps(value)}" for key, value in labels.items())
    return (
        f"# Written by `forklift image --print`: {package} {version} + {patches:d} patches,"
        f" overlay {labels.get(OVERLAY, 'none')}.\n"
        "# Build it in the folder `forklift wheel` wrote the wheel to (the build context).\n"
        f"FROM {base}\n"
        f"COPY {json.dumps([wheel, target])}\n"
        f"RUN {json.dumps(install)}\n"
        f"RUN {json.dumps(['rm', target])}\n"
        f"LABEL {label_lines}\n"
    )
