"""forklift flip: carry the series to a new upstream release and say what happened to each patch."""

__all__ = ["knobs", "report", "run", "triage"]  # the public modules; import what you need from them
