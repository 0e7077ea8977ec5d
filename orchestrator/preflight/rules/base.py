"""The shapes shared by every preflight rule: Rule, Finding and the Context rules read."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from orchestrator.preflight.hardware import GpuKind
from orchestrator.profiles.spec import Spec
from orchestrator.sglang import RELEASES, Release
from orchestrator.sglang.flags import flag

if TYPE_CHECKING:
    from orchestrator.preflight.gpus import GpuReport

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    flags: tuple[str, ...]
    message: str  # why: what SGLang will do with this config
    fix: str  # the exact change
    stricter: bool = False  # deploy refuses what SGLang itself would accept

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        s = f"[{self.severity}] {self.rule}: {self.message}"
        if self.stricter:
            s += " (SGLang itself starts with this; deploy is stricter because it cannot be right)"
        return s + f"\n    fix: {self.fix}"


@dataclass(frozen=True)
class ModelInfo:
    """A checkpoint as preflight sees it: from its config.json, else from the profile."""

    path: str | None
    source: str  # "config.json" | "profile" | "none"
    state: str  # "ok" | "missing" | "unreadable" | "hub" | "unset"
    detail: str = ""
    architecture: str | None = None
    attention: str | None = None
    hidden_size: int | None = None
    target_hidden_size: int | None = None
    num_attention_heads: int | None = None
    num_layers: int | None = None
    mtp_layers: int | None = None
    vocab_size: int | None = None


@dataclass(frozen=True)
class Context:
    spec: Spec
    args: Mapping[str, Any]  # SGLang's defaults overlaid with what the profile sets
    gpu: GpuKind | None
    base: ModelInfo
    draft: ModelInfo
    on_box: bool = False
    notes: dict[str, str] = field(default_factory=dict)
    gpus: GpuReport | None = None  # NVML's view of this machine; None when not probed
    user_mode: bool = False  # for a user manager (deploy up --user): nothing runs as root

    def is_set(self, key: str) -> bool:
        return key in self.spec.server

    @property
    def known_versions(self) -> tuple[str, ...]:

        return tuple(RELEASES)

    @property
    def release(self) -> Release:
        """The SGLang release this profile runs (whose rules and defaults apply)."""
        return self.spec.sglang.release

    def set_by(self, key: str) -> str:
        """Who set a [server] value, as the arg_groups record it: the profile file itself or
        a profile it extends (built-in or file)."""
        where = self.spec.provenance.get(f"server.{key}")
        if where is None:
            return f"{flag(key)} (the profile)"
        if self.spec.chain and where == self.spec.chain[0]:
            return f"{flag(key)} in the profile {where}"
        return f"{flag(key)} inherited from {where}"

    @property
    def algorithm(self) -> str | None:
        a = self.args.get("speculative_algorithm")
        return str(a).upper() if a else None

    @property
    def attention_kind(self) -> str | None:
        return self.base.attention

    def attention_backend(self) -> tuple[str | None, str]:
        """(effective target attention backend, who chose it)."""
        for key in ("decode_attention_backend", "attention_backend"):
            if self.args.get(key):
                return str(self.args[key]), self.set_by(key)
        gpu = self.gpu
        auto = self.release.default_attention_backend(
            gpu.family if gpu else None, gpu.sm if gpu else None, self.attention_kind
        )
        if auto and gpu is not None:
            return (
                auto,
                f"SGLang {self.release.version}'s default for an MLA model on {gpu.name}",
            )
        return None, "unknown (GPU or model attention type not known)"

    def page_size(self) -> tuple[int | None, str]:
        backend, _ = self.attention_backend()
        forced = self.release.forced_page_size.get(backend or "")
        user = self.args.get("page_size")
        allowed = self.release.allowed_page_sizes.get(backend or "", ())
        if forced and (user is None or (allowed and user not in allowed)):
            return forced, f"forced by the {backend} attention backend"
        if user is not None:
            return int(user), self.set_by("page_size")
        draft = str(self.args.get("speculative_draft_attention_backend") or "")
        if self.algorithm and draft in self.release.draft_forced_page_size:
            return (
                self.release.draft_forced_page_size[draft],
                f"forced by the {draft} draft attention backend",
            )
        if backend is None:
            return None, "unknown"
        return 1, f"SGLang {self.release.version}'s default"


Check = Callable[[Context], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    id: str
    doc: str  # one line: what the rule refuses and why
    sglang: str  # where SGLang enforces it, or what SGLang does instead
    check: Check
    section: str = "speculative"
    also: tuple[str, ...] = ()  # other finding ids this check reports

    @property
    def ids(self) -> tuple[str, ...]:
        return (self.id, *self.also)
