from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from model2vec import StaticModel
from pydantic import ValidationError
from tokenizers import Tokenizer, models, pre_tokenizers

from datawell.app import create_app
from datawell.config import Settings
from datawell.llm import embeddings
from datawell.llm.embeddings import DIMENSION, HashingEmbedder, MiniLMEmbedder, StaticMiniLMEmbedder
from datawell.llm.models import FixedChatModels
from datawell.services import Overrides, default_embedder
from tests.conftest import served


def tiny_static_model() -> StaticModel:
    """A static model over four words, standing in for the distilled MiniLM (which takes
    minutes to distill): `apple` and `pie` point the same way, `sky` elsewhere."""
    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "apple": 1, "pie": 2, "sky": 3}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()  # type: ignore[assignment]
    vectors = np.zeros((4, DIMENSION), dtype=np.float32)
    vectors[0, 0] = vectors[1, 1] = vectors[2, 1] = vectors[3, 2] = 1.0
    vectors[2, 0] = 0.2
    return StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True)


async def test_the_static_model_is_distilled_once_into_its_folder(tmp_path: Path, monkeypatch: Any) -> None:
    distilled: list[int] = []

    def distill() -> StaticModel:
        distilled.append(1)
        return tiny_static_model()

    monkeypatch.setattr(embeddings, "distill_static_minilm", distill)
    folder = tmp_path / "models" / "minilm-static"
    first = StaticMiniLMEmbedder(folder)
    apple, pie, sky = await first.embed(["apple", "apple pie", "sky"])
    assert len(apple) == first.dimension == DIMENSION
    assert float(np.dot(apple, pie)) > 0.9 > float(np.dot(apple, sky))
    assert await first.embed(["pie"]) and distilled == [1]  # loaded once per embedder

    again = await StaticMiniLMEmbedder(folder).embed(["apple pie"])  # as another process would
    assert distilled == [1]  # taken from the folder, not distilled again
    assert np.allclose(again[0], pie)
    assert [p.name for p in folder.parent.iterdir()] == ["minilm-static"]  # no staging left behind


async def test_a_starting_service_distills_the_static_model_in_the_background(
    settings: Settings, chat_models: FixedChatModels, monkeypatch: Any
) -> None:
    monkeypatch.setattr(embeddings, "distill_static_minilm", tiny_static_model)
    app = create_app(settings.model_copy(update={"embeddings_enabled": True}), Overrides(models=chat_models))
    async with served(app) as running:
        assert isinstance(running.services.embedder, StaticMiniLMEmbedder)
    assert (settings.data_dir / "models" / "minilm-static" / "config.json").exists()


def test_the_setting_picks_the_embedder(tmp_path: Path) -> None:
    static = default_embedder(Settings(data_dir=tmp_path))
    assert isinstance(static, StaticMiniLMEmbedder) and static.folder == tmp_path / "models" / "minilm-static"
    assert isinstance(default_embedder(Settings(data_dir=tmp_path, embeddings_model="minilm")), MiniLMEmbedder)
    assert isinstance(default_embedder(Settings(data_dir=tmp_path, embeddings_enabled=False)), HashingEmbedder)
    with pytest.raises(ValidationError, match="minilm-static"):
        Settings(data_dir=tmp_path, embeddings_model="bert")  # type: ignore[arg-type]
