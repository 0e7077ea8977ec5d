"""A disk or a quota that ran full is disk-full, in the words every layer prints it with (Python's
OSError, Rust's and Go's io errors, huggingface_hub's check before a download, the kubelet's
evictions), and /dev/shm that ran full stays host-memory-exhausted: the same errno, another
fix. None of these lines is taken from tests/logs/real/."""

from __future__ import annotations

import pytest

from orchestrator.diagnosis import classify_text
from orchestrator.diagnosis.model import example, under

_HUB = "/usr/local/lib/python3.12/dist-packages/huggingface_hub/file_download.py"

DISK: list[tuple[str, str]] = [
    (
        under(
            _HUB,
            "_download_to_tmp_and_move",
            "OSError: [Errno 28] No space left on device: "
            "'/data/hf/hub/models--moonshotai--Kimi-K2.6/blobs/0a1b.incomplete'",
        ),
        "/data/hf/hub/models--moonshotai--Kimi-K2.6/blobs/0a1b.incomplete",
    ),
    ("[rank3]: OSError: [Errno 122] Disk quota exceeded", "df -h"),
    (
        "thread 'main' panicked: Os { code: 28, kind: StorageFull, message: \"No space left on device\" }",
        "df -h",
    ),
    (
        "Error response from daemon: write /var/lib/docker/tmp/GetImageBlob123: no space left on device",
        "df -h",
    ),
    (
        "/usr/local/lib/python3.12/dist-packages/huggingface_hub/file_download.py:651: UserWarning: "
        "Not enough free disk space to download the file. The expected file size is: 4997.68 MB. "
        "The target location /data/hf/hub/models--moonshotai--Kimi-K2.6/blobs only has 812.10 MB "
        "free disk space.",
        "needs 4997.68 MB in /data/hf/hub/models--moonshotai--Kimi-K2.6/blobs, which has 812.10 MB",
    ),
    (
        "  Warning  Evicted  41s  kubelet  Pod ephemeral local storage usage exceeds the total "
        "limit of containers 200Gi.",
        "ephemeral-storage",
    ),
]


@pytest.mark.parametrize(("log", "in_fix"), DISK)
def test_a_full_disk_is_disk_full_and_the_fix_names_what_the_log_says(
    log: str, in_fix: str
) -> None:
    d = classify_text(log + "\n")
    assert d.category == "disk-full", (log, d.category, d.summary)
    assert in_fix in d.fix, d.fix


SHM_OR_OTHER: list[tuple[str, str]] = [
    (
        "gpu-7:4242:4300 [2] include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device",
        "host-memory-exhausted",
    ),
    (
        "RuntimeError: unable to write to file </torch_4242_1234567_0>: No space left on device (28)",
        "host-memory-exhausted",
    ),
    ("OSError: [Errno 28] No space left on device: '/dev/shm/psm_a1b2c3'", "host-memory-exhausted"),
    # SGLang's KV pool, in the same words but not a disk
    (
        "AssertionError: "
        + example(
            "kv-retract-no-space",
            detail=", self.token_to_kv_pool_allocator.available_size()=0",
        ),
        "kv-cache-oom-runtime",
    ),
]


@pytest.mark.parametrize(("log", "category"), SHM_OR_OTHER)
def test_shared_memory_and_the_kv_pool_are_not_a_disk(log: str, category: str) -> None:
    assert classify_text(log + "\n").category == category
