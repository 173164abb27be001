"""Issue 27: where a query's unknown names are in the catalog, and which ones nothing holds."""

from __future__ import annotations

from datawell.storage.access import NamespaceRef
from datawell.storage.hints import ColumnHint
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.names import flagged, own_words, triage

NAMESPACE = NamespaceRef("n1", "alice", "school")


def table(name: str, *columns: str, description: str = "", hints: dict[str, ColumnHint] | None = None) -> TableInfo:
    return TableInfo(
        name=name,
        dataset_id=name,
        namespace=NAMESPACE,
        physical=name,
        description=description,
        columns=dict.fromkeys(columns, "text"),
        column_descriptions={},
        hints=hints or {},
    )


SCHOOL = Catalog(
    NAMESPACE,
    [
        table("student", "student_id", "lastname", "total_gpa"),
        table("course", "course_id", "name", "num_enrolled"),
        table("student_record", "student_id", "course_id", "grade"),
        table("publication", "pid", "title", "reference_num"),
    ],
)


def test_a_column_of_another_table_is_named_with_every_table_that_has_it() -> None:
    found = triage(["course_id"], SCHOOL, "Which students took each course?")
    assert found.places == {"course_id": ["course.course_id", "student_record.course_id"]}
    assert found.hints() == ["'course_id' is in: course.course_id, student_record.course_id"]
    assert found.absent == []


def test_a_name_sharing_a_word_finds_the_column_before_the_table() -> None:
    assert triage(["reference"], SCHOOL, "Top 3 titles by references").places == {
        "reference": ["publication.reference_num"]
    }
    assert triage(["enrollment"], SCHOOL, "How many enrolled?").places == {"enrollment": ["course.num_enrolled"]}
    # "id" and "number" say what kind of value a column holds, not what it is about.
    assert triage(["phone_number"], SCHOOL, "What are the phone numbers?").places == {}


def test_a_name_is_absent_only_when_nothing_holds_its_words_and_the_question_asks_for_them() -> None:
    asked = triage(["email", "phone_number"], SCHOOL, "What is the email and phone of each student?")
    assert asked.absent == ["email", "phone_number"]
    # Invented by the model, not asked for: repaired, not refused.
    assert triage(["email"], SCHOOL, "List the students").absent == []
    # A word of a description or of a stored value counts as held.
    described = Catalog(NAMESPACE, [table("student", "contact", description="e-mail or email of the student")])
    valued = Catalog(NAMESPACE, [table("student", "kind", hints={"kind": ColumnHint(type="text", values=["email"])})])
    for catalog in (described, valued):
        assert triage(["email"], catalog, "What is the email of each student?").absent == []


def test_only_names_the_checker_called_unknown_are_flagged() -> None:
    query = "SELECT s.lastname, r.email FROM student AS s JOIN reference AS r ON s.student_id = r.sid"
    messages = ["r has no column 'email'", "no dataset named 'reference' in this namespace"]
    assert flagged(query, messages) == ["email", "reference"]
    assert flagged("SELECT FROM WHERE (", messages) == []
    assert own_words("numEnrolled") == ["enrolled"]


def test_the_table_that_holds_more_of_the_querys_names_is_named_first() -> None:
    """student has no course_id: the table joining both is the place the repair needs."""
    found = triage(["course_id"], SCHOOL, "How many students took each course?", used=["student_id", "course_id"])
    assert found.places["course_id"][0] == "student_record.course_id"
