"""Commands of the source and series stages: init, fetch, check, patches-md."""
