"""What a question says, for every rule and hint that reads it (issue 47: one lexicon; the
shape rules' own readings of the question move here as they are revisited)."""

from __future__ import annotations

import calendar
import re

# Names a question gives: quoted text, and runs of capitalised words that do not start a
# sentence ("flights to Los Angeles", "the domain "Machine Learning"").
_QUOTED = re.compile(r"[\"“]([^\"”]{2,})[\"”]|(?<!\w)'([^']{2,})'(?!\w)")
_CAPITALISED = re.compile(r"\b[A-Z][\w-]*(?:'[\w-]+)*(?:\s+[A-Z][\w-]*(?:'[\w-]+)*)*")
_SENTENCE_START = re.compile(r"(?:^|[.?!:]\s*)$")
_CALENDAR = frozenset(word.lower() for word in [*calendar.month_name[1:], *calendar.day_name])


def question_names(question: str) -> list[str]:
    """The names the question gives, in its first paragraph (what follows a blank line is
    instructions, not the question): quoted text, and capitalised words that do not start a
    sentence, longer than two letters and no month or weekday ("YYYY-MM" or "May" name no row)."""
    text = question.split("\n\n", 1)[0]
    found = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]
    for match in _CAPITALISED.finditer(text):
        name = match.group(0)
        if _SENTENCE_START.search(text[: match.start()]) or len(name) <= 2 or name.lower() in _CALENDAR:
            continue
        found.append(name)
    return list(dict.fromkeys(found))
