"""What the commands share: an option's help with its default and variable."""

from __future__ import annotations

from plantstub.config import env_name, shown_default


def option_help(text: str, field: str, env_note: str = "") -> str:
    """An option's help: what it does, its default (from config.py) and the variable that also sets it."""
    return f"{text} (default: {shown_default(field)}) [env {env_name(field)}{env_note}]"
