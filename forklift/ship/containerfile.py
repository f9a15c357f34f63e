"""`forklift image --print`: a Containerfile that installs the patched wheel over the upstream serving image.

Building it is the user's own tool's job (podman, docker, buildah); forklift runs no daemon. The labels
are the ones `forklift verify --image` holds the built image to.
"""

from __future__ import annotations

import json

from forklift.config import Config
from forklift.engines import engine_adapter
from forklift.errors import ConfigError
from forklift.series.gate import configured_series
from forklift.ship.labels import image_labels
from forklift.ship.wheel import WheelPlan


def base_image(config: Config, plan: WheelPlan, given: str | None = None) -> str:
    """FROM: --from, else [image] base, else the engine's serving image of the pinned version."""
    template = given or config.data.image.base or engine_adapter(config.data.engine.kind).serving_image
    if not template:
        raise ConfigError(f"{config.path}: no serving image is known for this engine; set [image] base")
    return template.replace("{version}", plan.upstream_version)


def containerfile(config: Config, plan: WheelPlan, base: str) -> str:
    """The Containerfile text: FROM base, the wheel installed without dependencies, the labels."""
    labels = image_labels(plan.pin, plan.version, plan.stamp.overlay_hash, configured_series(config))
    wheel = plan.filename
    label_lines = " \\\n      ".join(f"{key}={json.dumps(value)}" for key, value in labels.items())
    return (
        f"# Written by `forklift image --print`: {plan.pin.package} {plan.upstream_version}"
        f" + {len(plan.stamp.patches)} patches, overlay {plan.stamp.overlay_hash}.\n"
        "# Build it in the folder `forklift wheel` wrote the wheel to (the build context).\n"
        f"FROM {base}\n"
        f"COPY {wheel} /tmp/{wheel}\n"
        f"RUN python3 -m pip install --no-deps --no-cache-dir --force-reinstall /tmp/{wheel} && rm /tmp/{wheel}\n"
        f"LABEL {label_lines}\n"
    )
