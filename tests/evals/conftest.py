from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def offline_eval_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eval runs build their own services from the environment: keep them on the hashing
    embedder (no 500 MB model load) and without the embedded chat model."""
    monkeypatch.setenv("DATAWELL_EMBEDDINGS_ENABLED", "false")
    monkeypatch.setenv("DATAWELL_EMBEDDED_MODEL_ENABLED", "false")


def write_suite(folder: Path, body: str, name: str = "suite.yaml") -> Path:
    path = folder / name
    path.write_text(body, encoding="utf-8")
    return path
