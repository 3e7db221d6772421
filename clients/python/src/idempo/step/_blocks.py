"""The ``with`` blocks open on one step object, innermost last."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Generic, TypeVar

E = TypeVar("E")


class OpenBlocks(Generic[E]):
    """Per thread and per asyncio task (a context variable), so that two blocks sharing the step
    object never mix their records."""

    def __init__(self, name: str) -> None:
        self._open: ContextVar[tuple[E, ...]] = ContextVar(name, default=())

    def push(self, entry: E) -> None:
        self._open.set((*self._open.get(), entry))

    def pop(self) -> E | None:
        """The innermost block, no longer open; None when none is."""
        opened = self._open.get()
        if not opened:
            return None
        self._open.set(opened[:-1])
        return opened[-1]
