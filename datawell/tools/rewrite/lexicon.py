"""What a question says, for every rule and hint that reads it (issue 47: one lexicon).

Each rule's reading of the question moved here as it was, so the rules' modules read no
question text themselves. The readings still differ where they did before (`coverage.PREFIX`
letters for `column_named_by_question`, whole words or plurals elsewhere): making them one
reading would change what the rules do, which is the replay gate's to decide, not a move's."""

from __future__ import annotations

import calendar
import re

from datawell.tools.checker.dates import MONTHS as DATE_WORDS
from datawell.tools.coverage import PREFIX, singular
from datawell.tools.names import GENERIC

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


# Words of a question that says what its answer shows ("Give the doctor's name").
_SHOWS = re.compile(r"\b(give|list|show|return|display|tell me)\b|\bnames? of\b", re.IGNORECASE)


def says_what_to_show(question: str) -> bool:
    """Whether the question says what its answer shows ("Give the doctor's name")."""
    return bool(_SHOWS.search(question))


# Words by which a question asks for a few rows rather than all of them: numbers, and
# superlatives (the listed ones and any word in -est but the common nouns and verbs below).
_FEW = re.compile(
    r"\b(?:top|first|last|most|least|fewest|best|worst|max|maximum|min|minimum|single|only one|limit|"
    r"one|two|three|four|five|six|seven|eight|nine|ten|\d+|\w{2,}est)\b",
    re.IGNORECASE,
)
_NOT_SUPERLATIVE = frozenset(
    [
        "interest",
        "request",
        "test",
        "contest",
        "protest",
        "suggest",
        "digest",
        "harvest",
        "forest",
        "honest",
        "modest",
        "guest",
        "invest",
        "manifest",
        "arrest",
        "quest",
        "chest",
        "crest",
        "west",
        "rest",
        "nest",
        "pest",
        "vest",
        "zest",
        "lest",
        "jest",
        "attest",
        "priest",
        "conquest",
        "inquest",
    ]
)


def asks_for_few(question: str) -> bool:
    """Whether the question names a number or a superlative: it asks for a few rows."""
    return any(word.lower() not in _NOT_SUPERLATIVE for word in _FEW.findall(question))


def says(question: str, text: str) -> bool:
    """Whether the question says `text`, as whole words, in any case, or in the plural."""
    return bool(re.search(rf"(?<!\w){re.escape(text)}(?:e?s)?(?!\w)", question, re.IGNORECASE))


def stems(text: str) -> set[str]:
    """A text's words cut to the letters two words share to count as one (coverage.PREFIX:
    `departures`, `depart`: depar); short words whole."""
    return {w[:PREFIX] for w in re.findall(r"[a-z]+", text.lower()) if w not in GENERIC}


# "per country", "for each country", "in every region", "within each domain ID", "across
# different aircraft manufacturers": the one or two words the groups are asked by ("across
# all stations" sums over them: it is not a group).
_PER = re.compile(
    r"\b(?P<by>per|(?:for|in|within)\s+(?:each|every)|across\s+(?:the\s+)?(?:different|various|each))\s+"
    r"(?P<first>[a-z][a-z_]*)(?:\s+(?P<second>[a-z][a-z_]*))?",
    re.IGNORECASE,
)
# "Average rainfall per day" asks for one average of daily values as often as for one row
# per day: a time unit after "per" is left to the writer. "In each year" asks for a row a year.
_TIME_UNITS = frozenset(["second", "minute", "hour", "day", "week", "month", "quarter", "year"])


def asked_per(question: str) -> list[str]:
    """The column names a question may ask an aggregate per, the likeliest first: for "for each
    course ID" `course_id`, `course`, `id`; none when "per" comes before a time unit."""
    found = _PER.search(question)
    if not found:
        return []
    first, second = found.group("first").lower(), (found.group("second") or "").lower()
    if found.group("by").lower() == "per" and singular(first) in _TIME_UNITS:
        return []
    return [f"{first}_{second}", first, second] if second else [first]


MONTHS = DATE_WORDS[:12]  # january ... december
_MONTH = "|".join(MONTHS)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
# A month and its year, with the day before ("1 April 2024") or after ("April 1, 2024") if one is named.
_DATE = re.compile(rf"(?:\b({_DAY})\s+(?:of\s+)?)?\b({_MONTH})\s+(?:({_DAY}),?\s+)?(?:of\s+)?(\d{{4}})\b")
_YEAR = re.compile(r"(?<![-/\d])\b([12]\d{3})\b(?![-/]\d)")


def asked_periods(question: str) -> set[str]:
    """The months ("April 2024": '2024-04') and years ('2024') the question names with no day
    of them ("1 April 2024", "April 1, 2024" and "2024-04-01" name a day)."""
    text = question.lower()
    dates = _DATE.findall(text)
    periods = {f"{year}-{MONTHS.index(month) + 1:02d}" for before, month, after, year in dates if not before + after}
    with_month = {year for *_, year in dates}
    return periods | {year for year in _YEAR.findall(text) if year not in with_month}
