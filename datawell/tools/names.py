"""What to do with a name a query used that its tables do not have (issue 27).

The checker refuses a query that names an unknown column or table, and the model gets up to
three attempts to repair it. On unfamiliar schemas the repairs often go round in circles:
the model reads "student has no column 'course_id'" and tries another table that lacks it
too. Two facts from the whole catalog end that:

- **Where the name is.** The same column in other tables ("'course_id' is a column of
  course, course_offering, student_record"), or columns and tables that share a word with
  it ('reference' → publication.reference_num). The repair is told, so it can join the
  table that holds it.
- **That nothing holds it.** A name none of whose own words (not "id", "code", "number" ...)
  appears anywhere in the catalog (names, descriptions, values), and which the question
  itself asks for ("the email address of each author" → `author.email`): the data cannot
  answer, and the question is declined with QUERY_REFUSED instead of three repairs that can
  only invent more columns.
- **That no column is named like it, when the repairs have run out.** A name the question
  asks for that no column or table is named like, though a description mentions its words
  ("the phone number of each customer's contact", where a sales channel's description lists
  "web shop, sales rep, EDI or phone"): the first attempts are told to use only the listed
  columns; when the last one still needs the name, the question is declined with
  QUERY_REFUSED rather than ended with "no valid query". Only where the run would end in an
  error anyway, so no answerable question loses an answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from datawell.tools.catalog import Catalog
from datawell.tools.coverage import catalog_texts, content_words, nothing_like, word_match

# Words of a column name that say what kind of value it is, not what it is about: sharing
# one of these does not make two names alike.
GENERIC_WORDS = """id ids code codes name names num number numbers count total amount value values date time
type kind is has avg sum max min per first last new old all the of and"""
GENERIC = frozenset(GENERIC_WORDS.split())
PLACES = 4  # at most this many places are named for one name
PART = re.compile(r"[a-z]+|[0-9]+")


@dataclass(frozen=True)
class NameTriage:
    places: dict[str, list[str]] = field(default_factory=dict)  # name -> "table.column" where it or its words are
    absent: list[str] = field(default_factory=list)  # names the question asks for that nothing in the catalog holds
    # names the question asks for that no column or table is named like, though a description
    # or a value may mention their words ("phone" among a sales channel's kinds)
    unplaced: list[str] = field(default_factory=list)

    def hints(self) -> list[str]:
        """One line per name that has a place, for the repair's feedback."""
        return [f"'{name}' is in: {', '.join(places)}" for name, places in self.places.items()]


def parts(name: str) -> list[str]:
    """A name's words: `course_id` → course, id; `numEnrolled` → num, enrolled."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    return PART.findall(spaced.lower())


def own_words(name: str) -> list[str]:
    return [w for w in parts(name) if w not in GENERIC and len(w) >= 3 and not w.isdigit()]


def query_names(query: str) -> list[str]:
    """The column and table names a query uses (not its aliases or CTE names)."""
    try:
        tree = sqlglot.parse_one(query)
    except sqlglot.errors.SqlglotError:
        return []
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    names = [c.name for c in tree.find_all(exp.Column) if c.name]
    names += [t.name for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes]
    return list(dict.fromkeys(names))


def flagged(query: str, messages: list[str]) -> list[str]:
    """The names of the query that the checker's messages call unknown."""
    said = " ".join(messages).lower()
    return [n for n in query_names(query) if f"'{n.lower()}'" in said]


def triage(names: list[str], catalog: Catalog, question: str, used: list[str] | None = None) -> NameTriage:
    """Where each unknown name is in the catalog, and which ones the question asks for that
    nothing in the catalog holds. `used`: every name of the query; a table holding more of
    them is named first (the one that joins what the query reads)."""
    used_names = {n.lower() for n in used or []}
    tables = sorted(catalog.tables, key=lambda t: -len(used_names & {c.lower() for c in t.columns}))
    columns = [(t.name, c) for t in tables for c in t.columns]
    words, _ = catalog_texts(catalog)  # names, descriptions and values
    asked = set(content_words(question))
    places: dict[str, list[str]] = {}
    absent: list[str] = []
    unplaced: list[str] = []
    for name in names:
        mine = own_words(name)
        found = [f"{t}.{c}" for t, c in columns if c.lower() == name.lower()] or _alike(mine, catalog)
        if found:
            places[name] = found[:PLACES]
        elif mine and any(word_match(w, asked) for w in mine):
            unplaced.append(name)
            if not any(word_match(w, words) for w in mine):
                absent.append(name)
    return NameTriage(places=places, absent=absent, unplaced=unplaced)


def _alike(mine: list[str], catalog: Catalog) -> list[str]:
    """Columns sharing a word with the name, best first: a word of the column's own name
    counts twice a word of its table's; a table that alone shares one is named whole."""
    scored: list[tuple[int, str]] = []
    for table in catalog.tables:
        in_table = _shared(mine, parts(table.dataset_name))
        columns = [(2 * n + in_table, f"{table.name}.{c}") for c in table.columns if (n := _shared(mine, parts(c)))]
        scored += columns or ([(in_table, f"table {table.name}")] if in_table else [])
    scored.sort(key=lambda pair: -pair[0])
    return [place for _, place in scored]


def _shared(mine: list[str], theirs: list[str]) -> int:
    """How many of `mine` match one of `theirs` (the same word, or the same first five letters)."""
    words = {w for w in theirs if w not in GENERIC}
    return sum(1 for w in mine if word_match(w, words))


def refusal(triage: NameTriage, catalog: Catalog, *, unplaced: bool = False) -> str:
    """The refusal of a question whose subject no dataset holds (`unplaced`: no column is
    named like it), naming what they do hold."""
    names = triage.unplaced if unplaced else triage.absent
    return nothing_like(", ".join(" ".join(parts(n)) for n in names), catalog)
