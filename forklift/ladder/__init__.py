"""ladder: the memory settings that still boot and serve, one fresh boot and one burst per value."""

from forklift.ladder.axis import Axis, parse_axis
from forklift.ladder.schema import Burst, LadderBody, LadderCell

__all__ = ["Axis", "Burst", "LadderBody", "LadderCell", "parse_axis"]
