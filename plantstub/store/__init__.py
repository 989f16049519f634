"""The records of a `--stateful` stub: one Store per Session, answering the operations the spec's resources imply."""

from plantstub.store.records import Store

__all__ = ["Store"]
