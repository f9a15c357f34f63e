"""forklift.toml: the distribution's one config file (schema, loading, errors with file and key)."""

from forklift.config.load import Config, load_config

__all__ = ["Config", "load_config"]
