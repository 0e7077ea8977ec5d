"""What every reader of log lines shares: how much of a line any pattern may see, what
an ANSI colour code looks like however a shipper escaped it, and how a lazy line sequence
slices."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import overload

# No pattern ever sees more of a line than this (a 1 MB line costs what an 8 kB one does).
MAX_LINE = 8192

# ANSI colour codes, raw or escaped as a wrapper wrote them (\x1b, \u001b, \033, #033), and
# the bare "[0;36m" a copy-paste leaves when the ESC byte is lost.
ANSI = re.compile(
    r"(?:\x1b|\\x1b|\\u001b|\\033|#033|\^\[)\[[0-9;?]*[A-Za-z]|(?<![\w\]])\[(?:\d{1,3};)*\d{1,3}m"
)


class LazyStrings(Sequence[str | None]):
    """A sequence of optional strings worked out one index at a time: a subclass gives
    `__len__` and `_item(i)` (any index a list takes), slices come from them."""

    def _item(self, i: int) -> str | None:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> str | None: ...
    @overload
    def __getitem__(self, i: slice) -> list[str | None]: ...
    def __getitem__(self, i: int | slice) -> str | list[str | None] | None:
        if isinstance(i, slice):
            return [self._item(j) for j in range(*i.indices(len(self)))]
        return self._item(i)
