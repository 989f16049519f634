"""The version of plantstub, in one place (read by setuptools, the CLI and the admin API)."""

__version__ = "0.1.0"
