"""forklift flip: carry the series to a new upstream release and say what happened to each patch."""
