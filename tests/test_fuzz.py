"""Fuzz the CLI with hostile profiles and journals (hypothesis): whatever comes in, deploy
answers with exit status 0, 1 or 2, never a traceback (an exception escaping the CLI fails
the example) and never a hang (each example has a deadline).

Derandomized with a fixed example count, so CI runs the same examples every time and stays
well under a minute on two cores. In-process, through typer's CliRunner: the same code paths
as the `deploy` command, output boundary included."""

from __future__ import annotations

import json
import signal
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.profiles.fields import SCHEMA

FUZZ = settings(
    derandomize=True,
    database=None,
    max_examples=60,
    deadline=timedelta(seconds=20),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Characters that have broken parsers and unit files: controls (C0, DEL, C1, ESC), the
# separators and quotes of systemd's lists, %-specifiers, $, backslashes, non-ASCII.
NASTY = "\x00\x07\x1b\x7f\x85\x9b\n\r\t \\\"'%$/.;:@[]{}\u2028é漢"
text = st.text(alphabet=st.sampled_from(NASTY) | st.characters(codec="utf-8"), max_size=40)
paths = st.builds(lambda a, b: f"/{a}/{b}", text, text) | st.sampled_from(
    ["/var/lib/deploy", "/var/lib", "/etc", "/", "/var/lib/sglang deploy", "/srv/x\\", "/a/../b"]
)
big = st.sampled_from(["x" * 300_000, "/" + "a" * 5000, "é" * 2000])
scalars = (
    text
    | paths
    | big
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)
KEYS = {name: sorted(keys) for name, keys in SCHEMA.items()}
KEYS["server"] = ["model_path", "tp_size", "port", "host", "speculative_eagle_topk", "api_key"]


def _toml_key(k: str) -> str:
    return json.dumps(k)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # TOML basic strings take JSON's escapes (mostly: good for fuzz)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"


@st.composite
def profiles(draw: st.DrawFn) -> bytes:
    lines: list[str] = []
    if draw(st.booleans()):
        lines.append('extends = "kimi-k26-eagle3"')
    if draw(st.booleans()):
        lines.append(f"description = {_toml_value(draw(text | big))}")
    for section in draw(
        st.lists(st.sampled_from([*KEYS, "unit.environment", "bogus"]), max_size=3)
    ):
        lines.append(f"[{section}]")
        known = KEYS.get(section, [])
        keys = st.sampled_from(known) | text if known else text
        for k, v in draw(st.dictionaries(keys, values, max_size=4)).items():
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    body = "\n".join(lines) + "\n"
    depth = draw(st.sampled_from([0, 0, 0, 50, 5000]))
    if depth:
        body += "deep = " + "[" * depth + "]" * depth + "\n"
    raw = body.encode("utf-8", errors="surrogatepass")
    return raw + draw(st.binary(max_size=16)) if draw(st.integers(0, 9)) == 0 else raw


class Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Hang("a command ran for over 60 s: a hang")


def _invoke(args: list[str]) -> None:
    """One command; SIGALRM turns a hang into a failure (hypothesis' deadline only judges an
    example once it has ended)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        r = CliRunner().invoke(app, args, catch_exceptions=False, env={"DEPLOY_STATE_DIR": None})
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    # An exception escaping the CLI (a traceback) is raised here (catch_exceptions=False).
    assert r.exit_code in (0, 1, 2), (args, r.exit_code, r.output[-2000:])


@FUZZ
@given(profiles())
def test_fuzz_profiles(tmp_path_factory: Any, body: bytes) -> None:
    d = tmp_path_factory.mktemp("fuzz")
    p = d / "fuzz.toml"
    p.write_bytes(body)
    _invoke(["validate", str(p), "--no-nvml"])
    _invoke(["render", str(p)])


FIELDS = [
    "MESSAGE",
    "__REALTIME_TIMESTAMP",
    "_PID",
    "PRIORITY",
    "_SYSTEMD_INVOCATION_ID",
    "INVOCATION_ID",
    "_SYSTEMD_UNIT",
    "UNIT",
    "SYSLOG_IDENTIFIER",
    "_HOSTNAME",
    "_CMDLINE",
]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | text
    | st.sampled_from(["ERROR", "Traceback (most recent call last):", "99999999999999999999999"])
    | st.lists(st.integers(-300, 300), max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
json_lines = st.builds(
    lambda d: json.dumps(d, ensure_ascii=False),
    st.dictionaries(st.sampled_from(FIELDS) | text, json_values, max_size=6),
)
dates = st.from_regex(
    r"\[20\d\d-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} TP0\] ", fullmatch=True
)
short = st.from_regex(
    r"(Jan|Feb|Dec) [0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} h s\[1\]: ", fullmatch=True
)
iso = st.from_regex(
    r"20\d\d-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{4} h s: ", fullmatch=True
)
text_lines = st.builds(lambda a, b: a + b, dates | short | iso | st.just(""), text)
long_lines = st.builds(
    lambda c, n: c * n,
    st.sampled_from(["E", "(", "a ", "\x1b[", "=", "é"]),
    st.integers(1, 200_000),
)
journal_lines = st.one_of(
    json_lines.map(str.encode),
    text_lines.map(lambda s: s.encode("utf-8", errors="surrogatepass")),
    long_lines.map(str.encode),
    st.binary(max_size=64),
)


@FUZZ
@given(st.lists(journal_lines, min_size=1, max_size=20))
def test_fuzz_journals(tmp_path_factory: Any, lines: list[bytes]) -> None:
    d = tmp_path_factory.mktemp("fuzz")
    p = d / "journal.log"
    p.write_bytes(b"\n".join(lines) + b"\n")
    for extra in ([], ["--json"], ["--classify"], ["--classify", "--json"]):
        _invoke(["logs", "--input", str(p), *extra])


K8S_KEYS = ["items", "status", "metadata", "involvedObject", "reason", "message", "spec"]
K8S_KEYS += ["containerStatuses", "lastTimestamp", "state", "lastState", "exitCode", "labels"]
k8s_values = st.recursive(
    json_values,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(K8S_KEYS) | text, inner, max_size=4)
    ),
    max_leaves=20,
)
k8s_docs = st.builds(
    lambda kind, rest: json.dumps({"kind": kind, **rest}, ensure_ascii=False),
    st.sampled_from(["Pod", "List", "Event", "PodList", "EventList", "Node"]),
    st.dictionaries(st.sampled_from(K8S_KEYS) | text, k8s_values, max_size=5),
)


@settings(FUZZ, max_examples=30)
@given(st.lists(k8s_docs, min_size=1, max_size=3))
def test_fuzz_kubectl_json(tmp_path_factory: Any, docs: list[str]) -> None:
    """`logs --classify --input` also reads `kubectl get pod|events -o json`."""
    d = tmp_path_factory.mktemp("fuzz")
    p = d / "kubectl.json"
    p.write_text("\n".join(docs) + "\n", encoding="utf-8", errors="surrogatepass")
    for extra in (["--classify"], ["--classify", "--json"]):
        _invoke(["logs", "--input", str(p), *extra])


def test_fuzz_is_derandomized() -> None:
    """CI runs the same examples every time (a failure reproduces by rerunning)."""
    assert FUZZ.derandomize and FUZZ.database is None
