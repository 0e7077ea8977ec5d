"""The GPU on the box: NVML is faked at the pynvml function boundary only (FakeBox); the probe,
/proc lookups, rules and report are real. An 8 x B200 and an 8 x H200 box give SGLang's verdicts
for each; with no NVML library (as on this CI machine) nothing raises and the finding says why."""

from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pynvml
import pytest

from orchestrator import preflight, profiles
from orchestrator.preflight import gpus
from orchestrator.preflight.gpus import Gpu, GpuProcess, kind_note, kind_of, unit_of_cgroup
from orchestrator.sglang.memory import default_mem_fraction_static
from tests.helpers import EAGLE3_DRAFTER_CONFIG, KIMI_K26_CONFIG, checkpoint, write_profile

MIB = 1 << 20
B200_MIB = 183359  # what NVML reports for a B200's memory.total
H200_MIB = 143771
TREE = {"speculative_num_steps": 3, "speculative_eagle_topk": 4, "speculative_num_draft_tokens": 8}


@dataclass
class FakeGpu:
    name: str
    cc: tuple[int, int]
    total_mib: int
    free_mib: int
    procs: list[tuple[int, int | None]] = field(default_factory=list)  # (pid, used MiB)
    uuid: str = ""


class FakeBox:
    """A machine as pynvml would show it. Only pynvml's functions are replaced."""

    def __init__(self, devices: list[FakeGpu], driver: str = "580.82.07", cuda: int = 13000):
        for i, d in enumerate(devices):
            d.uuid = d.uuid or f"GPU-{i:08x}-0000-0000-0000-000000000000"
        self.devices, self.driver, self.cuda = devices, driver, cuda
        self.inits = 0

    def install(self, mp: pytest.MonkeyPatch) -> FakeBox:
        def init() -> None:
            self.inits += 1

        def handle(i: int) -> FakeGpu:
            if not 0 <= i < len(self.devices):
                raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            return self.devices[i]

        def memory(h: FakeGpu) -> Any:
            return pynvml.c_nvmlMemory_t(
                total=h.total_mib * MIB,
                free=h.free_mib * MIB,
                used=(h.total_mib - h.free_mib) * MIB,
            )

        def processes(h: FakeGpu) -> list[Any]:
            out = []
            for pid, used in h.procs:
                obj = pynvml.nvmlStructToFriendlyObject(
                    pynvml.c_nvmlProcessInfo_v3_t(pid=pid, usedGpuMemory=(used or 0) * MIB)
                )
                if used is None:
                    obj.usedGpuMemory = None  # what pynvml does with NVML_VALUE_NOT_AVAILABLE
                out.append(obj)
            return out

        fakes = {
            "nvmlInit": init,
            "nvmlShutdown": lambda: None,
            "nvmlSystemGetDriverVersion": lambda: self.driver,
            "nvmlSystemGetCudaDriverVersion": lambda: self.cuda,
            "nvmlDeviceGetCount": lambda: len(self.devices),
            "nvmlDeviceGetHandleByIndex": handle,
            "nvmlDeviceGetName": lambda h: h.name,
            "nvmlDeviceGetUUID": lambda h: h.uuid,
            "nvmlDeviceGetCudaComputeCapability": lambda h: h.cc,
            "nvmlDeviceGetMemoryInfo": memory,
            "nvmlDeviceGetComputeRunningProcesses": processes,
        }
        for name, fn in fakes.items():
            assert hasattr(pynvml, name), name  # fake only functions pynvml really has
            mp.setattr(pynvml, name, fn)
        return self


def b200(n: int = 8, free: int = B200_MIB - 600) -> list[FakeGpu]:
    return [FakeGpu("NVIDIA B200", (10, 0), B200_MIB, free) for _ in range(n)]


def h200(n: int = 8, free: int = H200_MIB - 600) -> list[FakeGpu]:
    return [FakeGpu("NVIDIA H200", (9, 0), H200_MIB, free) for _ in range(n)]


@pytest.fixture
def b200_box(monkeypatch: pytest.MonkeyPatch) -> FakeBox:
    return FakeBox(b200()).install(monkeypatch)


@pytest.fixture
def h200_box(monkeypatch: pytest.MonkeyPatch) -> FakeBox:
    return FakeBox(h200()).install(monkeypatch)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A real process whose PID the fake NVML lists, so the /proc lookups are real."""
    p = subprocess.Popen(["sleep", "300"])
    comm = Path(f"/proc/{p.pid}/comm")
    deadline = time.monotonic() + 10
    while comm.read_text().strip() != "sleep" and time.monotonic() < deadline:
        time.sleep(0.01)  # until the child has exec'd
    try:
        yield p
    finally:
        p.kill()
        p.wait()


def run(
    tmp_path: Path, name: str = "p", *, gpu: str | None = None, on_box: bool = False, **data: Any
) -> preflight.Report:
    spec = profiles.load(str(write_profile(tmp_path, name=name, **data)))
    return preflight.run(spec, gpu=gpu, on_box=on_box, gpus=gpus.probe())


def ids(r: preflight.Report, severity: str = "error") -> set[str]:
    return {f.rule for f in r.findings if f.severity == severity}


def finding(r: preflight.Report, rule: str) -> Any:
    return next(f for f in r.findings if f.rule == rule)


# --- the probe ---------------------------------------------------------------------------------


def test_probe_reads_the_box(b200_box: FakeBox) -> None:
    rep = gpus.probe()
    assert rep.available and rep.reason == ""
    assert (rep.driver_version, rep.cuda_version) == ("580.82.07", "13.0")
    assert len(rep.gpus) == 8 and b200_box.inits == 1
    g = rep.gpus[3]
    assert (g.index, g.name, g.sm, g.memory_total_mib) == (3, "NVIDIA B200", 100, B200_MIB)
    assert kind_of(g) is not None and kind_of(g).name == "b200"  # type: ignore[union-attr]
    j = rep.to_json()
    assert j["gpus"][0]["kind"] == "b200" and j["gpus"][0]["processes"] == []
    assert "NVIDIA B200" in "\n".join(rep.table())


def test_no_nvml_library_for_real() -> None:
    """This machine has no libnvidia-ml: pynvml.nvmlInit raises NVMLError_LibraryNotFound."""
    if ctypes.util.find_library("nvidia-ml"):
        pytest.skip("this machine has a real NVML")
    with pytest.raises(pynvml.NVMLError_LibraryNotFound):
        pynvml.nvmlInit()
    rep = gpus.probe()
    assert not rep.available and "libnvidia-ml.so.1" in rep.reason
    assert rep.table() == [f"GPUs: not read from NVML: {rep.reason}"]


def test_no_nvml_is_a_finding_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing() -> None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", missing)
    r = run(tmp_path)
    assert r.ok
    f = finding(r, "nvml-unavailable")
    assert f.severity == "info"
    assert "libnvidia-ml.so.1" in f.message and "gpu-count" in f.message and "gpu-busy" in f.message
    assert "[hardware] gpu (b200)" in f.message
    assert r.resolved["gpu"] == "b200" and r.resolved["gpu_source"] == "[hardware] gpu"
    assert r.resolved["nvml"]["available"] is False
    # on the box (deploy up) it is a warning
    r2 = preflight.run(r_spec(tmp_path), on_box=True, gpus=gpus.probe())
    assert finding(r2, "nvml-unavailable").severity == "warning"


def r_spec(tmp_path: Path) -> Any:
    return profiles.load(str(write_profile(tmp_path, name="again")))


@pytest.mark.parametrize(
    ("err", "words"),
    [
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "kernel driver is not loaded"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "no permission"),
        (pynvml.NVML_ERROR_UNKNOWN, "NVML failed to start"),
    ],
)
def test_probe_never_raises(monkeypatch: pytest.MonkeyPatch, err: int, words: str) -> None:
    def fail() -> None:
        raise pynvml.NVMLError(err)

    monkeypatch.setattr(pynvml, "nvmlInit", fail)
    rep = gpus.probe()
    assert not rep.available and words in rep.reason


def test_probe_without_devices_or_with_a_lost_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    box = FakeBox([]).install(monkeypatch)
    assert gpus.probe().reason == "NVML works but sees no GPUs"
    box.devices = b200(2)

    def lost(h: Any) -> Any:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    monkeypatch.setattr(pynvml, "nvmlDeviceGetMemoryInfo", lost)
    rep = gpus.probe()
    assert not rep.available and "GPU 0" in rep.reason


def test_probe_for_cli(b200_box: FakeBox) -> None:
    assert gpus.probe_for_cli(False) is None and b200_box.inits == 0
    rep = gpus.probe_for_cli(True)
    assert rep is not None and rep.available


@pytest.mark.parametrize(
    ("name", "cc", "kind"),
    [
        ("NVIDIA B200", (10, 0), "b200"),
        ("NVIDIA B300 SXM6 AC", (10, 3), "b300"),
        ("NVIDIA GB200", (10, 0), "gb200"),
        ("NVIDIA H200", (9, 0), "h200"),
        ("NVIDIA H200 NVL", (9, 0), "h200"),
        ("NVIDIA H100 80GB HBM3", (9, 0), "h100"),
        ("NVIDIA H100 PCIe", (9, 0), "h100"),
        ("NVIDIA H20", (9, 0), "h20"),
        ("NVIDIA H800", (9, 0), "h800"),
        ("NVIDIA A100-SXM4-80GB", (8, 0), "a100"),
        ("NVIDIA L40S", (8, 9), "l40s"),
    ],
)
def test_kind_by_name(name: str, cc: tuple[int, int], kind: str) -> None:
    g = Gpu(0, name, "GPU-x", cc[0] * 10 + cc[1], 80000, 80000)
    k = kind_of(g)
    assert k is not None and k.name == kind and kind_note(g) is None


def test_kind_by_compute_capability_says_so() -> None:
    gh = Gpu(0, "NVIDIA GH200 480GB", "GPU-x", 90, 97871, 97000)
    k = kind_of(gh)
    assert k is not None and k.family == "hopper" and k.sm == 90 and not k.blackwell
    assert "judged as hopper by its compute capability sm_90" in (kind_note(gh) or "")
    rtx = Gpu(0, "NVIDIA RTX PRO 6000 Blackwell Server Edition", "GPU-x", 120, 97887, 97000)
    assert kind_of(rtx).blackwell  # type: ignore[union-attr]
    t4 = Gpu(0, "Tesla T4", "GPU-x", 75, 15360, 15000)
    assert kind_of(t4) is None and "neither" in (kind_note(t4) or "")


def test_unit_of_cgroup() -> None:
    assert (
        unit_of_cgroup("0::/system.slice/sglang-kimi-k26-eagle3.service\n")
        == "sglang-kimi-k26-eagle3.service"
    )
    assert unit_of_cgroup("0::/system.slice/other.service/payload\n") == "other.service"
    assert unit_of_cgroup("0::/user.slice/user-0.slice/session-4.scope\n") == "session-4.scope"
    v1 = "12:pids:/system.slice/x.service\n1:name=systemd:/system.slice/llm.service\n"
    assert unit_of_cgroup(v1) == "llm.service"
    assert unit_of_cgroup("0::/\n") is None


def test_default_mem_fraction_is_sglangs_formula() -> None:
    # B200, TP 8, MLA: 512 + 16384*1.5 + 1024 + 512*2 + 1536 = 28672 MiB reserved
    assert default_mem_fraction_static(B200_MIB, {"tp_size": 8}, True) == round(
        (B200_MIB - 28672) / B200_MIB, 3
    )
    # H200: chunked prefill 8192: 512 + 12288 + 1024 + 1024 + 1536 = 16384
    assert default_mem_fraction_static(H200_MIB, {"tp_size": 8}, True) == round(
        (H200_MIB - 16384) / H200_MIB, 3
    )


# --- SGLang's verdicts on each GPU ------------------------------------------------------------


def test_builtin_profile_accepted_on_b200(b200_box: FakeBox) -> None:
    r = preflight.run(profiles.load("kimi-k26-eagle3"), gpus=gpus.probe())
    assert r.ok, [f.text() for f in r.errors]
    assert not ids(r, "warning") - {"model-path-missing"}
    assert r.resolved["gpu"] == "b200" and r.resolved["gpu_source"] == "NVML"
    assert r.resolved["attention_backend"]["value"] == "trtllm_mla"
    assert r.resolved["page_size"]["value"] == 64
    assert len(r.resolved["nvml"]["gpus"]) == 8


def test_tree_without_backend_rejected_on_b200(tmp_path: Path, b200_box: FakeBox) -> None:
    r = run(tmp_path, server=TREE)
    assert "spec-tree-page-size-backend" in ids(r)
    assert r.resolved["attention_backend"]["value"] == "trtllm_mla"
    assert r.resolved["page_size"] == {
        "value": 64,
        "set_by": "forced by the trtllm_mla attention backend",
    }
    # flashinfer chosen explicitly (fa3 is Hopper-only): accepted
    ok = run(
        tmp_path,
        "ok",
        server={
            **TREE,
            "attention_backend": "flashinfer",
            "speculative_draft_attention_backend": "flashinfer",
        },
    )
    assert ok.ok, [f.text() for f in ok.errors]


def test_tree_without_backend_accepted_on_h200(tmp_path: Path, h200_box: FakeBox) -> None:
    r = run(tmp_path, server=TREE, hardware={"gpu": "h200"})
    assert r.ok, [f.text() for f in r.errors]
    assert r.resolved["attention_backend"]["value"] == "fa3" and r.resolved["gpu"] == "h200"
    # The built-in B200 profile's [hardware] gpu against an H200 box: SGLang takes the box's
    # defaults, so the tree is judged for H200 (accepted) but the mismatch is an error.
    r2 = run(tmp_path, "b", server=TREE)
    assert "spec-tree-page-size-backend" not in ids(r2)
    f = finding(r2, "gpu-mismatch")
    assert (
        f.severity == "error"
        and "[hardware] gpu says b200" in f.message
        and "8 x NVIDIA H200" in f.message
    )
    assert 'set [hardware] gpu = "h200"' in f.fix


def test_trtllm_mla_on_h200_rejected(tmp_path: Path, h200_box: FakeBox) -> None:
    r = run(tmp_path, server={"attention_backend": "trtllm_mla"}, hardware={"gpu": "h200"})
    f = finding(r, "trtllm-mla-needs-blackwell")
    assert f.severity == "error" and "this box has h200 (sm_90)" in f.message
    assert run(tmp_path, "ok", server={"attention_backend": "fa3"}, hardware={"gpu": "h200"}).ok


def test_explicit_gpu_wins_off_the_box(tmp_path: Path, h200_box: FakeBox) -> None:
    r = run(tmp_path, gpu="b200", server=TREE)
    assert "spec-tree-page-size-backend" in ids(r)  # judged for b200 as asked
    f = finding(r, "gpu-mismatch")
    assert f.severity == "info" and "this machine has 8 x NVIDIA H200" in f.message
    assert not ids(r, "error") & {"gpu-count", "gpu-busy", "gpu-free-memory"}
    # on the box, --gpu against NVML is an error: SGLang will use the box's GPU
    r2 = run(tmp_path, "x", gpu="b200", on_box=True)
    assert "gpu-mismatch" in ids(r2)


def test_four_gpus_for_tp8_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeBox(b200(4)).install(monkeypatch)
    r = run(tmp_path)
    f = finding(r, "gpu-count")
    assert f.severity == "error" and "NVML sees 4 GPU(s)" in f.message
    assert f.fix == "set tp_size to 4 or fewer"
    assert run(tmp_path, "ok", server={"tp_size": 4}).ok


def test_cuda_visible_devices_in_the_unit(tmp_path: Path, b200_box: FakeBox) -> None:
    r = run(tmp_path, unit={"environment": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}})
    f = finding(r, "gpu-count")
    assert 'CUDA_VISIBLE_DEVICES="0,1,2,3" in [unit.environment] leaves 4' in f.message
    assert "list 8 GPUs in CUDA_VISIBLE_DEVICES" in f.fix
    assert run(tmp_path, "ok", unit={"environment": {"CUDA_VISIBLE_DEVICES": "7,6,5,4,3,2,1,0"}}).ok


def test_mixed_gpus_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeBox(b200(4) + h200(4)).install(monkeypatch)
    r = run(tmp_path)
    f = finding(r, "gpu-mixed")
    assert "GPUs 0-3: NVIDIA B200 (sm_100); GPUs 4-7: NVIDIA H200 (sm_90)" in f.message
    assert f.fix.startswith('set CUDA_VISIBLE_DEVICES = "0,1,2,3"')
    assert not ids(run(tmp_path, "ok", server={"tp_size": 4}), "error") & {"gpu-mixed"}


def test_foreign_process_named_with_pid_and_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sleeper: subprocess.Popen[bytes]
) -> None:
    devices = b200()
    devices[2].procs = [(sleeper.pid, 60 * 1024)]
    devices[2].free_mib -= 60 * 1024
    FakeBox(devices).install(monkeypatch)
    cgroup = Path(f"/proc/{sleeper.pid}/cgroup").read_text()
    unit = unit_of_cgroup(cgroup)  # None in a bare container, the host's unit elsewhere
    r = run(tmp_path)
    f = finding(r, "gpu-busy")
    assert f.severity == "error"
    assert (
        f"pid {sleeper.pid} (sleep" in f.message
        and "GPU 2" in f.message
        and "60.0 GiB" in f.message
    )
    if unit and unit.endswith(".service"):
        assert f"of {unit}" in f.message and f"systemctl stop {unit}" in f.fix
    else:
        assert "not a systemd service" in f.message and f"kill {sleeper.pid}" in f.fix
    assert r.resolved["nvml"]["gpus"][2]["processes"][0]["name"] == "sleep"
    # 60 GiB gone from one GPU of eight: SGLang's own balance check fails too
    mem = finding(r, "gpu-free-memory")
    assert mem.severity == "error" and "The memory capacity is unbalanced" in mem.message
    assert "GPU 2 has 118.5 GiB free" in mem.message


def test_own_unit_is_not_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sleeper: subprocess.Popen[bytes]
) -> None:
    devices = b200()
    for d in devices:
        d.procs = [(sleeper.pid, 150 * 1024)]
        d.free_mib = B200_MIB - 150 * 1024 - 600
    FakeBox(devices).install(monkeypatch)
    real = gpus.process_info

    def in_own_unit(pid: int, used: int | None) -> GpuProcess:
        p = real(pid, used)  # real /proc lookup; the cgroup is the host's, so name the unit
        return p._replace(unit="sglang-p.service")

    monkeypatch.setattr(gpus, "process_info", in_own_unit)
    r = run(tmp_path)
    assert r.ok, [f.text() for f in r.errors]
    f = finding(r, "gpu-busy")
    assert (
        f.severity == "info"
        and "own unit sglang-p.service" in f.message
        and "restarts" in f.message
    )
    assert "gpu-free-memory" not in ids(r) | ids(r, "warning")


def test_whole_box_held_by_another_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    devices = b200(free=20 * 1024)
    for d in devices:
        d.procs = [(os.getpid(), B200_MIB - 20 * 1024)]
    FakeBox(devices).install(monkeypatch)
    # without a local checkpoint: free < mem_fraction_static x total
    r = run(tmp_path)
    f = finding(r, "gpu-free-memory")
    assert (
        f.severity == "error"
        and "below mem_fraction_static 0.85 x its memory = 152.2 GiB" in f.message
    )
    assert "Not enough memory. Please try to increase --mem-fraction-static" in f.message
    assert "gpu-busy" in ids(r)
    # with local checkpoints: the weights do not fit in 0.85 x 20 GiB
    base = checkpoint(tmp_path / "base", KIMI_K26_CONFIG)
    draft = checkpoint(tmp_path / "draft", EAGLE3_DRAFTER_CONFIG)
    with open(base / "model-00001-of-00001.safetensors", "r+b") as fh:
        fh.truncate(160 * (1 << 30))  # sparse: 160 GiB of "weights", 20 GiB per GPU
    r2 = run(
        tmp_path, "w", server={"model_path": str(base), "speculative_draft_model_path": str(draft)}
    )
    f2 = finding(r2, "gpu-free-memory")
    assert "less than the ~20.0 GiB of weights each GPU loads" in f2.message
    assert "Loaded weights leave no GPU memory for the KV cache" in f2.message


def test_some_memory_held_is_a_warning_when_the_weights_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeBox(b200(free=140 * 1024)).install(monkeypatch)
    base = checkpoint(tmp_path / "base", KIMI_K26_CONFIG)
    with open(base / "model-00001-of-00001.safetensors", "r+b") as fh:
        fh.truncate(8 * 70 * (1 << 30))
    r = run(
        tmp_path,
        server={"model_path": str(base)},
        unset=[
            "server.speculative_draft_model_path",
            "server.speculative_algorithm",
            "server.speculative_num_steps",
            "server.speculative_eagle_topk",
            "server.speculative_num_draft_tokens",
            "server.speculative_draft_attention_backend",
        ],
    )
    f = finding(r, "gpu-free-memory")
    assert (
        f.severity == "warning"
        and "KV cache gets ~49.0 GiB per GPU instead of ~82.2 GiB" in f.message
    )
    assert r.ok


def test_imbalance_check_off_in_the_unit_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    devices = b200()
    devices[5].free_mib = 100 * 1024
    FakeBox(devices).install(monkeypatch)
    env = {"SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "0"}
    r = run(tmp_path, unit={"environment": env})
    msgs = [f for f in r.findings if f.rule == "gpu-free-memory"]
    assert any(f.severity == "warning" and "unbalanced" in f.message for f in msgs)


def test_unlisted_processes_are_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeBox(b200()).install(monkeypatch)

    def refused(h: Any) -> Any:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION)

    monkeypatch.setattr(pynvml, "nvmlDeviceGetComputeRunningProcesses", refused)
    r = run(tmp_path)
    assert r.ok
    assert "did not list the processes on GPUs 0-7" in finding(r, "gpu-busy").message


def test_unknown_gpu_name_goes_by_compute_capability(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeBox([FakeGpu("NVIDIA GH200 480GB", (9, 0), 97871, 97000) for _ in range(8)]).install(
        monkeypatch
    )
    r = run(tmp_path, server=TREE, unset=["hardware.gpu"])
    assert "judged as hopper" in finding(r, "gpu-unnamed").message
    assert r.resolved["attention_backend"]["value"] == "fa3"


def test_cli_import_stays_free_of_pynvml() -> None:
    code = "import sys, orchestrator.cli, orchestrator.preflight.gpus, orchestrator.preflight; print('pynvml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_gpu_deploy_does_not_know_is_a_mismatch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeBox([FakeGpu("Tesla T4", (7, 5), 15360, 15000) for _ in range(8)]).install(monkeypatch)
    r = run(tmp_path)
    assert "neither" in finding(r, "gpu-unnamed").message
    f = finding(r, "gpu-mismatch")
    assert f.severity == "error" and "a GPU deploy does not know" in f.message
