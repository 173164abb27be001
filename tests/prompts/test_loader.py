from __future__ import annotations

from pathlib import Path

import pytest

from datawell.prompts import PromptError, PromptLibrary, parse


def test_system_and_user_parts() -> None:
    prompt = parse("p", "You are ${role}.\n=== user ===\nQuestion: ${question} costs $$5")
    system, user = prompt.render(role="a analyst", question="why")
    assert system.content == "You are a analyst."
    assert user.content == "Question: why costs $5"


def test_missing_and_unknown_slots_are_errors() -> None:
    prompt = parse("p", "Hello ${name}")
    with pytest.raises(PromptError, match=r"missing \['name'\]"):
        prompt.render()
    with pytest.raises(PromptError, match=r"unknown \['other'\]"):
        prompt.render(name="x", other="y")


def test_malformed_slot_is_an_error() -> None:
    with pytest.raises(PromptError, match="malformed"):
        parse("p", "costs $5")


def test_folder_overrides_bundled(tmp_path: Path) -> None:
    (tmp_path / "custom.txt").write_text("from the folder ${x}")
    library = PromptLibrary(tmp_path)
    assert library.get("custom").render(x=1)[0].content == "from the folder 1"
    with pytest.raises(PromptError, match="no prompt named"):
        library.get("nope")


def test_every_bundled_prompt_renders() -> None:
    library = PromptLibrary()
    for name in library.names():
        prompt = library.get(name)
        messages = prompt.render(**{slot: f"<{slot}>" for slot in prompt.slots})
        assert messages, name
        assert "${" not in "".join(str(m.content) for m in messages), name
