"""Where the rewrite rules live (issue 47): each rule is one module of tools/rewrite/ named
after it, holding its body, well under the project's 400 lines; no rule module reads the
question's text but through the lexicon."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from datawell.tools import rewrite
from datawell.tools.rewrite.registry import RULES

PACKAGE = Path(rewrite.__file__).parent
# The modules that are no rule: what a rule is, the programs, the driver, what rules share.
SHARED = {"__init__", "before_run", "on_refusal", "registry", "change", "driver", "groups", "sql", "joins", "lexicon"}


@pytest.mark.parametrize("name", sorted(RULES))
def test_each_rule_is_a_module_of_its_name_with_its_body_under_150_lines(name: str) -> None:
    module = importlib.import_module(f"datawell.tools.rewrite.{name}")
    assert callable(getattr(module, name))
    assert len(Path(str(module.__file__)).read_text(encoding="utf-8").splitlines()) < 150


def test_every_module_of_the_package_is_a_rule_or_shared() -> None:
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    assert modules - SHARED == set(RULES)


REGEX_READS = {"search", "match", "fullmatch", "findall", "finditer", "sub", "split"}


def reads_the_question_by_regex(source: str) -> bool:
    """Whether the code matches a pattern against `question` (or anything made of it)."""
    for call in (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)):
        if isinstance(call.func, ast.Attribute) and call.func.attr in REGEX_READS:
            read = [n for a in call.args for n in ast.walk(a) if isinstance(n, ast.Name)]
            if any(n.id == "question" for n in read):
                return True
    return False


def test_a_regex_over_the_question_is_found() -> None:
    assert reads_the_question_by_regex("_WHOLE.search(question)")
    assert reads_the_question_by_regex('re.findall(r"[a-z]+", question.lower())')
    assert not reads_the_question_by_regex("asked_per(question)")


@pytest.mark.parametrize("name", sorted(RULES))
def test_a_rule_reads_the_question_through_the_lexicon(name: str) -> None:
    # A pattern over the question in a rule module would be one more reading of "the
    # question says X" beside the lexicon's.
    assert not reads_the_question_by_regex((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))


def test_the_rule_modules_tools_shape_and_mend_held_are_gone() -> None:
    for gone in ("shape", "mend"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"datawell.tools.{gone}")
