"""The shapes of what deploy knows about one SGLang release (plain, frozen data).

A `Release` holds everything deploy relies on about one SGLang version: its flag table
(generated from the wheel), the texts it prints when it refuses or fails (`Message`), where in
its source they come from (`Frame`), its start-up milestones, its speculative-decoding rules
and its hardware-dependent defaults. Preflight, the classifier, the generated docs and the
test stand-in all read these; no SGLang text is typed anywhere else (tests/test_knowledge.py).

Standard library only: the test stand-in imports this package too.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

_FIELD_RE_DEFAULT = r".+?"


@dataclass(frozen=True)
class Frame:
    """A traceback frame of SGLang's source: `File ".../sglang/<file>", line N, in <function>`."""

    file: str  # relative to the sglang package, e.g. "srt/arg_groups/speculative_hook.py"
    line: int
    function: str
    source: str = ""  # the source line CPython prints under the frame
    carets: str = ""  # the caret line CPython 3.11 prints, or ""

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


@dataclass(frozen=True)
class Message:
    """One text SGLang prints, exactly as it prints it.

    ``text`` is a `str.format` template: ``{name}`` stands where SGLang interpolates a value
    (literal braces are doubled). ``fields`` may give a regex per field for matching (default
    a lazy ``.+?``). ``exc`` is the exception class it is raised with, if any.
    """

    id: str
    text: str
    source: str  # where SGLang prints it: "srt/arg_groups/speculative_hook.py:1278 _handle_eagle_family"
    exc: str | None = None
    preflight: str | None = None  # the preflight rule that catches the same thing before a start
    fields: Mapping[str, str] = field(default_factory=dict)
    # Other wordings of the same message in releases older than those deploy knows, as field
    # reports show them (tests/logs/real), so that the classifier knows them too.
    older: tuple[str, ...] = ()

    def format(self, **values: object) -> str:
        """The text with the fields filled in."""
        return self.text.format(**values)

    def line(self, **values: object) -> str:
        """What the traceback's last line reads: ``ValueError: <text>`` (or just the text)."""
        text = self.format(**values)
        return f"{self.exc}: {text}" if self.exc else text

    def parts(self) -> list[tuple[str, str | None]]:
        """(literal text, following field name or None), as `string.Formatter` splits it."""
        return [(lit, name) for lit, name, _, _ in string.Formatter().parse(self.text)]

    def literals(self) -> list[str]:
        """The literal stretches of the text (what a guard test looks for elsewhere)."""
        return [lit for lit, _ in self.parts() if lit]

    def keyword(self) -> str:
        """The longest literal stretch: every line that carries the message contains it."""
        return max(self.literals(), key=len, default=self.text)

    def head_regex(self, **fields: str) -> str | None:
        """A regex for the message's first sentence, when a paste or a terminal cut the rest
        (`Model architectures ['X'] are not supported for now.` without its list of supported
        ones): the text up to the first ". " that follows a field; None when there is none."""
        out: list[str] = []
        seen_field = False
        for lit, name in self.parts():
            k = lit.find(". ") if seen_field else -1
            if k >= 0:
                out.append(re.escape(lit[: k + 1]))
                return "".join(out)
            out.append(re.escape(lit))
            if name is None:
                return None
            seen_field = True
            key = name or "value"
            rx = fields.get(key, self.fields.get(key, _FIELD_RE_DEFAULT))
            out.append(f"(?P<{key}>{rx})")
        return None

    def regex(self, **fields: str) -> str:
        """A regex matching the text, each field a named group (reused fields back-reference).
        `fields` overrides a field's regex (e.g. code="-9"). Trailing blanks are optional."""
        out: list[str] = []
        seen: set[str] = set()
        parts = self.parts()
        for i, (lit, name) in enumerate(parts):
            last = i == len(parts) - 1
            rx = fields.get(name or "value", self.fields.get(name or "value", ""))
            if last and lit != lit.rstrip() and (name is None or rx == ".*"):
                # trailing blanks are optional, and so is the blank before a closing field
                # that may be empty ("... other processes. {detail}" pasted without its detail)
                out.append(re.escape(lit.rstrip()) + r"\s*")
            else:
                out.append(re.escape(lit))
            if name is None:
                continue
            key = name or "value"
            if key in seen:
                out.append(f"(?P={key})")
            else:
                seen.add(key)
                rx = fields.get(key, self.fields.get(key, _FIELD_RE_DEFAULT))
                out.append(f"(?P<{key}>{rx})")
        return "".join(out)


@dataclass(frozen=True)
class Milestone:
    phase: str  # short id, stable: used in --json output
    label: str  # what the operator reads on the live line
    pattern: re.Pattern[str]
    text: str = ""  # what SGLang prints (an example line, for the stand-in and the docs)


@dataclass(frozen=True)
class Release:
    """What deploy knows about one SGLang release."""

    version: str
    args_file: str  # the flag table beside this module, generated from the wheel
    messages: Mapping[str, Message]
    frames: Mapping[str, Frame]  # named places in SGLang's source (tracebacks, docs)
    chains: Mapping[str, tuple[Frame, ...]]  # named call chains leading to those places
    milestones: tuple[Milestone, ...]
    # Speculative decoding
    algorithms: tuple[str, ...]
    eagle_family: tuple[str, ...]
    # (steps, top-k, draft tokens) SGLang picks when --speculative-num-steps is unset, by the
    # target's architecture; "*" for every other architecture.
    auto_spec_params: Mapping[str, tuple[int, int, int]]
    has_speculative_adaptive: bool  # `--speculative-adaptive` exists (num_steps from an EMA)
    # The num_steps values adaptive moves among (its default candidate_steps); it works with
    # top-k 1 only and refuses a starting num_steps outside them.
    adaptive_candidate_steps: tuple[int, ...]
    # With --speculative-adaptive and steps unset, SGLang skips its assertion and auto-choice.
    adaptive_skips_auto_choice: bool
    has_draft_attention_backend: bool  # `--speculative-draft-attention-backend` exists
    # Attention backends that implement top-k > 1 trees with page size > 1.
    tree_paged_backends: tuple[str, ...]
    # Backends that force a page size, and the size they force.
    forced_page_size: Mapping[str, int]
    # Page sizes a user may keep with a forcing backend (others are replaced).
    allowed_page_sizes: Mapping[str, tuple[int, ...]]
    # Draft attention backends that force the page size too (when the target's does not).
    draft_forced_page_size: Mapping[str, int]
    # The default attention backend for a DeepSeek-V3-style MLA model, by GPU class:
    # "sm100" (B200/B300), "hopper", "other".
    mla_default_backend: Mapping[str, str]
    # The CUDA-graph flags this release takes, for fix texts: "max_bs" lowers the largest
    # captured batch, "disable" turns decode graphs off.
    graph_flags: Mapping[str, str]
    install_hint: str  # how to install exactly this release, for fix texts
    notes: tuple[str, ...] = ()  # how this release differs from the next one, for the docs
    # The release that first took this release's `graph_flags` names ("" when this one did):
    # fix texts name the older flags as the ones "before" it.
    graph_flags_since: str = ""
    # Messages of newer releases that this one does not have (stated, not forgotten).
    absent: tuple[str, ...] = ()
    # The algorithms that run an EAGLE draft head (a separate drafter checkpoint, or the target's
    # MTP layers): what `deploy tune` sweeps and what bench's accept-length warning is about.
    eagle_draft_algorithms: tuple[str, ...] = ("EAGLE", "EAGLE3")
    # Fields gone from this release's table -> what replaces them, for the "unknown field" hint.
    renamed: Mapping[str, str] = field(default_factory=dict)
    # How this release resolves a deprecated field the profile sets (a `Deprecated*Action` in
    # its flag table): field, the profile's [server] -> the [server] SGLang ends up with. The
    # default keeps the field as it is (it is then rendered with its deprecated flag).
    resolve_deprecated: Callable[[str, Mapping[str, Any]], dict[str, Any]] = field(
        default=lambda _name, server: dict(server)
    )

    def message(self, mid: str) -> Message:
        return self.messages[mid]

    def phase_of(self, line: str) -> Milestone | None:
        """The start-up milestone this log line marks, or None for every other line."""
        for m in self.milestones:
            if m.pattern.search(line):
                return m
        return None

    def gpu_class(self, family: str | None, sm: int | None) -> str | None:
        """How this release's defaults tell GPUs apart: "sm100" (B200/B300, not RTX sm_120),
        "hopper", "other"; None when the GPU is not known."""
        if family is None or sm is None:
            return None
        if family == "blackwell" and sm // 10 == 10:
            return "sm100"
        return "hopper" if family == "hopper" else "other"

    def default_attention_backend(
        self, family: str | None, sm: int | None, attention: str | None
    ) -> str | None:
        """The attention backend this release picks for a DeepSeek-V3-style MLA model on a GPU;
        None where it depends on more than deploy knows (GPU unknown, not an MLA model)."""
        cls = self.gpu_class(family, sm)
        if cls is None or attention != "mla":
            return None
        return self.mla_default_backend.get(cls)

    def auto_params(self, architecture: str | None) -> tuple[int, int, int]:
        """(steps, top-k, draft tokens) SGLang picks when --speculative-num-steps is unset."""
        return self.auto_spec_params.get(architecture or "", self.auto_spec_params["*"])

    def frame(self, name: str) -> Frame:
        return self.frames[name]
