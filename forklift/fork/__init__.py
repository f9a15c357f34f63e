"""The fork round-trip: export a fork branch as a series, import it back, replay identity, source binding."""
