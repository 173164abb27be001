"""Prompt files and their loader.

A prompt is a plain-text file `<name>.txt` in this folder (or in a folder given to
`PromptLibrary`, so evals can try other prompts). Slots are written `${slot}`; a literal
dollar sign is `$$`. A line `=== user ===` separates the system part from the user part;
without it the whole file is the user part. Rendering fails on a missing slot and on a
value for a slot the file does not have, so a prompt and its caller cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

PROMPTS_DIR = Path(__file__).parent
USER_MARKER = "=== user ==="


class PromptError(ValueError):
    pass


@dataclass(frozen=True)
class Prompt:
    name: str
    system: Template | None
    user: Template

    @property
    def slots(self) -> frozenset[str]:
        found = set(self.user.get_identifiers())
        if self.system is not None:
            found |= set(self.system.get_identifiers())
        return frozenset(found)

    def render(self, **values: object) -> list[BaseMessage]:
        text = self._values(values)
        messages: list[BaseMessage] = []
        if self.system is not None:
            messages.append(SystemMessage(self.system.substitute(text)))
        messages.append(HumanMessage(self.user.substitute(text)))
        return messages

    def text(self, **values: object) -> str:
        """A prompt without a system part, rendered as one text (a part of a message)."""
        if self.system is not None:
            raise PromptError(f"prompt {self.name!r} has a system part: render it as messages")
        return self.user.substitute(self._values(values))

    def _values(self, values: dict[str, object]) -> dict[str, str]:
        missing = self.slots - values.keys()
        unknown = values.keys() - self.slots
        if missing or unknown:
            raise PromptError(
                f"prompt {self.name!r}: "
                + "; ".join(
                    part
                    for part in (
                        f"missing {sorted(missing)}" if missing else "",
                        f"unknown {sorted(unknown)}" if unknown else "",
                    )
                    if part
                )
            )
        return {k: str(v) for k, v in values.items()}


def parse(name: str, source: str) -> Prompt:
    system_text, marker, user_text = source.partition(f"\n{USER_MARKER}\n")
    if not marker:
        system_text, user_text = "", source
    system = Template(system_text.strip()) if system_text.strip() else None
    user = Template(user_text.strip())
    for part in (system, user):
        if part is not None and not part.is_valid():
            raise PromptError(f"prompt {name!r} has a malformed slot (write a literal dollar sign as $$)")
    return Prompt(name=name, system=system, user=user)


class PromptLibrary:
    """Prompts by name from one folder; a name missing there falls back to the bundled one."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self._cache: dict[str, Prompt] = {}

    def names(self) -> list[str]:
        found = {p.stem for p in PROMPTS_DIR.glob("*.txt")}
        if self.directory is not None:
            found |= {p.stem for p in self.directory.glob("*.txt")}
        return sorted(found)

    def get(self, name: str) -> Prompt:
        if name not in self._cache:
            for folder in (self.directory, PROMPTS_DIR):
                if folder is not None and (folder / f"{name}.txt").is_file():
                    self._cache[name] = parse(name, (folder / f"{name}.txt").read_text(encoding="utf-8"))
                    break
            else:
                raise PromptError(f"no prompt named {name!r}")
        return self._cache[name]
