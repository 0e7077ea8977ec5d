"""What every reader of log lines shares: how much of a line any pattern may see, and what
an ANSI colour code looks like however a shipper escaped it."""

from __future__ import annotations

import re

# No pattern ever sees more of a line than this (a 1 MB line costs what an 8 kB one does).
MAX_LINE = 8192

# ANSI colour codes, raw or escaped as a wrapper wrote them (\x1b, \u001b, \033, #033), and
# the bare "[0;36m" a copy-paste leaves when the ESC byte is lost.
ANSI = re.compile(
    r"(?:\x1b|\\x1b|\\u001b|\\033|#033|\^\[)\[[0-9;?]*[A-Za-z]|(?<![\w\]])\[(?:\d{1,3};)*\d{1,3}m"
)
