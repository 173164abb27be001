"""Issue 27: a refused query's slips that have one sensible reading, mended without the model."""

from __future__ import annotations

from datawell.storage.access import NamespaceRef
from datawell.storage.hints import ColumnHint
from datawell.tools.catalog import Catalog, TableInfo
from datawell.tools.rewrite.filter_where_stored import filter_where_stored
from datawell.tools.rewrite.groups import mend, reroute_joins

NAMESPACE = NamespaceRef("n1", "alice", "school")


def table(name: str, *columns: str, hints: dict[str, ColumnHint] | None = None) -> TableInfo:
    return TableInfo(
        name=name,
        dataset_id=name,
        namespace=NAMESPACE,
        physical=name,
        description="",
        columns={c: "integer" if c.endswith(("_id", "_time", "year")) else "text" for c in columns},
        column_descriptions={},
        hints=hints or {},
    )


SCHOOL = Catalog(
    NAMESPACE,
    [
        table("course", "course_id", "name"),
        table("student", "student_id", "lastname"),
        table("student_record", "student_id", "course_id", "grade"),
        table("area", "course_id", "area"),
    ],
)


def test_a_table_lacking_a_column_is_swapped_for_the_one_dataset_holding_all_it_is_read_for() -> None:
    query = (
        "SELECT course.name, COUNT(student.student_id) AS enrolled FROM course "
        "LEFT JOIN student ON course.course_id = student.course_id GROUP BY course.name"
    )

    found = mend(query, SCHOOL)

    assert found.query == (
        "SELECT course.name, COUNT(student.student_id) AS enrolled FROM course "
        "LEFT JOIN student_record AS student ON course.course_id = student.course_id GROUP BY course.name"
    )
    assert found.changes == ["student has no course_id: read student_record, which has course_id, student_id"]


def test_no_swap_when_more_than_one_dataset_could_stand_in() -> None:
    """`student_id` is in student and student_record, and neither is named like `course`:
    the swap needs one clear choice."""
    query = "SELECT c.student_id FROM course AS c JOIN area AS a ON a.area = c.name"
    found = mend(query, SCHOOL)
    assert "FROM course AS c" in found.query  # not swapped; the one dataset linked to course is joined
    assert found.changes == ["course has no student_id: joined student_record on course_id"]


def test_a_column_read_through_the_wrong_alias_is_read_through_the_table_that_has_it() -> None:
    query = "SELECT r.name, r.grade FROM course AS c JOIN student_record AS r ON r.course_id = c.course_id"

    found = mend(query, SCHOOL)

    assert found.query == (
        "SELECT c.name, r.grade FROM course AS c JOIN student_record AS r ON r.course_id = c.course_id"
    )
    assert found.changes == ["r.name read as c.name"]


def test_a_join_condition_is_never_requalified() -> None:
    """Moving `r.name` in the ON to `c.name` would compare a table with itself."""
    query = "SELECT c.name FROM course AS c JOIN student_record AS r ON r.name = c.name"
    assert mend(query, SCHOOL).changes == []


SECONDS = ColumnHint(type="integer", low=1_577_836_800, high=1_580_515_200)  # January 2020
FLIGHTS = Catalog(
    NAMESPACE,
    [
        table("flight", "flight_id", "departure_time", "year", hints={"departure_time": SECONDS}),
        table("season", "year", hints={"year": ColumnHint(type="integer", low=2019, high=2024)}),
    ],
)


def test_unix_seconds_in_a_date_function_are_read_as_a_timestamp() -> None:
    query = "SELECT strftime('%m', departure_time) AS month, COUNT(*) FROM flight GROUP BY month"

    found = mend(query, FLIGHTS)

    assert found.query == (
        "SELECT STRFTIME('%m', TO_TIMESTAMP(departure_time)) AS month, COUNT(*) FROM flight GROUP BY month"
    )
    assert found.changes == ["departure_time holds Unix seconds: read as to_timestamp()"]
    extracted = mend("SELECT EXTRACT(MONTH FROM f.departure_time) FROM flight AS f", FLIGHTS)
    assert extracted.query == "SELECT EXTRACT(MONTH FROM TO_TIMESTAMP(f.departure_time)) FROM flight AS f"


def test_the_year_of_a_column_of_years_is_the_column() -> None:
    """The checker refuses `strftime('%Y', year)` of integer years, and the small model sends
    it back unchanged: the year it asks for is the column as stored."""
    query = "SELECT strftime('%Y', s.year) AS y, COUNT(*) FROM season AS s GROUP BY strftime('%Y', s.year)"

    found = mend(query, FLIGHTS)

    assert found.query == "SELECT s.year AS y, COUNT(*) FROM season AS s GROUP BY s.year"
    assert found.changes == ["s.year holds years: STRFTIME('%Y', s.year) read as the column"]
    assert mend("SELECT EXTRACT(YEAR FROM year) FROM season", FLIGHTS).query == "SELECT year FROM season"


def test_other_numbers_in_a_date_function_are_left_to_the_checker() -> None:
    assert mend("SELECT strftime('%m', year) FROM season", FLIGHTS).changes == []  # no month in a year
    assert mend("SELECT strftime('%Y', flight_id) FROM flight", FLIGHTS).changes == []


def test_a_query_that_does_not_parse_or_needs_nothing_comes_back_as_it_was() -> None:
    for query in ("SELEC name FROM", "SELECT name FROM course WHERE course_id = 1"):
        found = mend(query, SCHOOL)
        assert (found.query, found.changes) == (query, [])


def test_a_column_read_through_an_alias_the_query_never_defines_is_read_through_the_table_that_has_it() -> None:
    query = "SELECT c.name, SUM(p.grade) FROM course AS c JOIN student_record AS r ON r.course_id = c.course_id"

    found = mend(query, SCHOOL)

    assert found.query == (
        "SELECT c.name, SUM(r.grade) FROM course AS c JOIN student_record AS r ON r.course_id = c.course_id"
    )
    assert found.changes == ["p.grade read as r.grade"]


def test_an_outer_alias_in_a_correlated_subquery_is_left_alone() -> None:
    query = (
        "SELECT c.name FROM course AS c WHERE EXISTS "
        "(SELECT 1 FROM student_record AS r WHERE r.course_id = c.course_id AND c.name = r.grade)"
    )
    assert mend(query, SCHOOL).changes == []


ACADEMIC = Catalog(
    NAMESPACE,
    [
        table("author", "aid", "name", "oid"),
        table("publication", "pid", "title", "year", "jid"),
        table("writes", "aid", "pid"),
        table("journal", "jid", "name"),
    ],
)


def test_a_join_that_skipped_a_table_goes_through_the_one_table_linking_both() -> None:
    query = (
        "SELECT t1.name, COUNT(*) AS n FROM author AS t1 JOIN publication AS t2 ON t1.aid = t2.aid "
        "WHERE t2.year = 2021 GROUP BY t1.name ORDER BY n DESC LIMIT 1"
    )

    found = mend(query, ACADEMIC)

    assert found.query == (
        "SELECT t1.name, COUNT(*) AS n FROM author AS t1 JOIN writes ON t1.aid = writes.aid "
        "JOIN publication AS t2 ON writes.pid = t2.pid "
        "WHERE t2.year = 2021 GROUP BY t1.name ORDER BY n DESC LIMIT 1"
    )
    assert found.changes == ["publication has no aid: joined through writes, which has aid and pid"]


def test_a_left_join_stays_a_left_join_through_the_linking_table() -> None:
    found = mend("SELECT a.name, p.title FROM author AS a LEFT JOIN publication AS p ON p.aid = a.aid", ACADEMIC)

    assert found.query == (
        "SELECT a.name, p.title FROM author AS a LEFT JOIN writes ON a.aid = writes.aid "
        "LEFT JOIN publication AS p ON writes.pid = p.pid"
    )


def test_no_bridge_when_the_linking_table_is_not_one_clear_choice() -> None:
    """`journal` lacks `oid`, and no table has `oid` and one column of journal's: nothing to go
    through; and with a second table linking author and publication there are two readings."""
    assert mend("SELECT a.name FROM author AS a JOIN journal AS j ON a.oid = j.oid", ACADEMIC).changes == []
    two_links = Catalog(NAMESPACE, [*ACADEMIC.tables, table("reviews", "aid", "pid", "score")])
    query = "SELECT a.name, p.title FROM author AS a JOIN publication AS p ON a.aid = p.aid"
    assert mend(query, two_links).changes == []


FLIGHTS_AND_AIRLINES = Catalog(
    NAMESPACE,
    [
        table("flight", "flight_id", "airline_code", "from_airport"),
        table("airline", "airline_code", "airline_name"),
        table("airport", "airport_code", "airport_name"),
    ],
)


def test_a_one_table_query_reading_another_tables_column_joins_that_table() -> None:
    query = (
        "SELECT airline_name, COUNT(*) AS n FROM flight WHERE from_airport = 'BOS' "
        "GROUP BY airline_name, airline_code ORDER BY n DESC"
    )

    found = mend(query, FLIGHTS_AND_AIRLINES)

    assert found.query == (
        "SELECT airline.airline_name, COUNT(*) AS n FROM flight "
        "JOIN airline ON flight.airline_code = airline.airline_code WHERE flight.from_airport = 'BOS' "
        "GROUP BY airline.airline_name, flight.airline_code ORDER BY n DESC"
    )
    assert found.changes == ["flight has no airline_name: joined airline on airline_code"]


def test_a_column_the_only_table_lacks_read_through_its_alias_joins_the_table_that_has_it() -> None:
    found = mend(
        "SELECT t1.airline_name, t1.flight_id FROM flight AS t1 WHERE t1.from_airport = 'ORD'", FLIGHTS_AND_AIRLINES
    )

    assert found.query == (
        "SELECT airline.airline_name, t1.flight_id FROM flight AS t1 "
        "JOIN airline ON t1.airline_code = airline.airline_code WHERE t1.from_airport = 'ORD'"
    )


def test_no_join_without_exactly_one_shared_column() -> None:
    """`airport` has airport_name but shares no column with flight: joining it would need a
    condition the query does not say."""
    assert mend("SELECT airport_name FROM flight", FLIGHTS_AND_AIRLINES).changes == []


STOCK = Catalog(
    NAMESPACE,
    [
        table("stock_levels", "warehouse_code", "product_code", "quantity_on_hand"),
        table("warehouses", "warehouse_code", "name", "city"),
        table("products", "product_code", "name"),
    ],
)


def test_a_name_made_of_another_tables_name_and_column_joins_that_table() -> None:
    query = (
        "SELECT warehouse_name, SUM(quantity_on_hand) AS units FROM stock_levels "
        "GROUP BY warehouse_name ORDER BY units DESC LIMIT 1"
    )

    found = mend(query, STOCK)

    assert found.query == (
        "SELECT warehouses.name AS warehouse_name, SUM(stock_levels.quantity_on_hand) AS units FROM stock_levels "
        "JOIN warehouses ON stock_levels.warehouse_code = warehouses.warehouse_code "
        "GROUP BY warehouses.name ORDER BY units DESC LIMIT 1"
    )
    assert found.changes == [
        "stock_levels has no warehouse_name (warehouses.name): joined warehouses on warehouse_code"
    ]


def test_two_tables_own_ids_are_no_link() -> None:
    """`orders.id` and `customers.id` are each table's own rows: joining on them pairs an order
    with whichever customer has its number."""
    shop = Catalog(NAMESPACE, [table("orders", "id", "customer_id", "amount"), table("customers", "id", "name")])
    assert mend("SELECT customer_name FROM orders", shop).changes == []


def test_a_prefixed_name_of_two_tables_is_left_to_the_model() -> None:
    """`product_name` is products.name, `warehouse_city` warehouses.city: two tables to join."""
    assert mend("SELECT product_name, warehouse_city FROM stock_levels", STOCK).changes == []


STUDENTS = Catalog(NAMESPACE, [table("student", "student_id", "declare_major", "minor", "total_gpa")])


def test_a_column_name_a_letter_off_is_read_by_its_name() -> None:
    found = mend("SELECT s.student_id FROM student AS s WHERE s.declared_major IS NOT NULL", STUDENTS)

    assert found.query == "SELECT s.student_id FROM student AS s WHERE s.declare_major IS NOT NULL"
    assert found.changes == ["student has no declared_major: read declare_major"]


def test_a_name_not_close_to_exactly_one_column_is_left_to_the_model() -> None:
    """`gpa` is a word of `total_gpa`, not a slip of it; an alias is not a column."""
    assert mend("SELECT AVG(gpa) FROM student", STUDENTS).changes == []
    assert mend("SELECT COUNT(*) AS minors FROM student ORDER BY minors", STUDENTS).changes == []


DOMAINS = Catalog(
    NAMESPACE,
    [
        table("domain", "did", "name"),
        table("publication", "pid", "jid", "title", "reference_num"),
        table("journal", "jid", "name"),
        table("domain_publication", "did", "pid"),
        table("domain_journal", "did", "jid"),
    ],
)


def test_a_join_of_two_tables_keys_goes_through_the_dataset_holding_both_tables_own_keys() -> None:
    """`d.did = p.jid` pairs a domain with the publications of whichever journal has the same
    number; domain_publication holds domain's `did` and publication's `pid`."""
    query = (
        "SELECT d.name, AVG(p.reference_num) FROM domain AS d "
        "LEFT JOIN publication AS p ON d.did = p.jid GROUP BY d.name"
    )

    found = reroute_joins(query, DOMAINS)

    assert found.query == (
        "SELECT d.name, AVG(p.reference_num) FROM domain AS d "
        "LEFT JOIN domain_publication ON d.did = domain_publication.did "
        "LEFT JOIN publication AS p ON domain_publication.pid = p.pid GROUP BY d.name"
    )
    assert found.changes == [
        "d.did and p.jid are keys of different tables: domain and publication joined through "
        "domain_publication (did, pid)"
    ]


def test_crossed_keys_with_no_dataset_of_the_tables_own_keys_go_through_one_holding_the_two_named() -> None:
    """offering_instructor's own key is `offering_instructor_id`, and no dataset holds it
    with course's `course_id`; of the two holding `offering_id` and `course_id`, the one
    whose own key is `offering_id` (course_offering) is the link, not student_record."""
    school = Catalog(
        NAMESPACE,
        [
            table("course", "course_id", "name"),
            table("course_offering", "offering_id", "course_id", "semester"),
            table("offering_instructor", "offering_instructor_id", "offering_id", "instructor_id"),
            table("student_record", "student_id", "course_id", "offering_id"),
        ],
    )
    query = "SELECT c.name FROM offering_instructor AS oi JOIN course AS c ON c.course_id = oi.offering_id"

    found = reroute_joins(query, school)

    assert found.query == (
        "SELECT c.name FROM offering_instructor AS oi "
        "JOIN course_offering ON oi.offering_id = course_offering.offering_id "
        "JOIN course AS c ON course_offering.course_id = c.course_id"
    )


def test_joins_of_a_key_with_a_reference_or_with_itself_are_left_as_written() -> None:
    """`cited` is no table's key; `did` on both sides is the same key."""
    catalog = Catalog(NAMESPACE, [*DOMAINS.tables, table("cite", "cited", "citing")])
    for query in (
        "SELECT p.title FROM publication AS p JOIN cite AS c ON p.pid = c.cited",
        "SELECT d.name FROM domain AS d JOIN domain_publication AS dp ON d.did = dp.did",
    ):
        assert reroute_joins(query, catalog).changes == [], query


def test_crossed_keys_with_two_datasets_between_them_are_left_to_the_model() -> None:
    catalog = Catalog(NAMESPACE, [*DOMAINS.tables, table("journal_domain", "jid", "did")])
    query = "SELECT j.name FROM journal AS j JOIN domain AS d ON d.did = j.jid"

    assert reroute_joins(query, catalog).changes == []


def test_a_join_of_a_table_no_dataset_is_named_goes_when_the_other_table_has_what_it_was_read_for() -> None:
    query = "SELECT p.title FROM publication AS p JOIN reference AS r ON p.pid = r.pid ORDER BY r.reference_num DESC"

    found = mend(query, DOMAINS)

    assert found.query == "SELECT p.title FROM publication AS p ORDER BY p.reference_num DESC"
    assert found.changes == ["no dataset is named reference: its reference_num read from publication"]


def test_a_join_of_a_table_no_dataset_is_named_stays_when_it_is_read_for_what_no_table_has() -> None:
    query = "SELECT p.title, r.weight FROM publication AS p JOIN reference AS r ON p.pid = r.pid"

    assert mend(query, DOMAINS).changes == []


ADVISING = Catalog(
    NAMESPACE,
    [
        table("course", "course_id", "name", "department", "easiness_score"),
        table("program", "program_id", "name", "college"),
        table("instructor", "instructor_id", "name"),
        table("course_tags_count", "course_id", "hilarious"),
    ],
)


def test_a_join_that_cannot_run_of_a_table_read_for_nothing_else_goes() -> None:
    """advising: `course` has no `program_id`, and `department` is course's: program is read
    only in a condition that cannot run."""
    query = (
        "SELECT t1.easiness_score, t1.name FROM course AS t1 INNER JOIN program AS t2 "
        "ON t1.program_id = t2.program_id WHERE t2.department = 'Computer Science'"
    )

    found = mend(query, ADVISING)

    assert found.query == (
        "SELECT t1.easiness_score, t1.name FROM course AS t1 WHERE t1.department = 'Computer Science'"
    )
    assert found.changes == [
        "t2.department read as t1.department",
        "the join of program could not run (t1.program_id) and nothing else read it: dropped",
    ]


def test_a_from_table_read_only_in_a_join_that_cannot_run_gives_its_place_to_the_joined_table() -> None:
    query = (
        "SELECT t1.course_id, SUM(t2.hilarious) FROM instructor AS t2 "
        "JOIN course_tags_count AS t1 ON t1.instructor_id = t2.instructor_id GROUP BY t1.course_id"
    )

    found = mend(query, ADVISING)

    assert found.query == "SELECT t1.course_id, SUM(t1.hilarious) FROM course_tags_count AS t1 GROUP BY t1.course_id"


def test_a_join_that_cannot_run_stays_when_its_table_is_read_joined_for_nothing_or_outer() -> None:
    """Dropping a join whose table the query still reads, one the model wrote for no column
    (it may stand for a filter the model forgot), or an outer join would guess: the model is
    asked again."""
    read = "SELECT t1.name, t2.college FROM course AS t1 JOIN program AS t2 ON t1.program_id = t2.program_id"
    for_nothing = "SELECT t1.name FROM course AS t1 JOIN program AS t2 ON t1.program_id = t2.program_id"
    outer = (
        "SELECT t1.name FROM course AS t1 LEFT JOIN program AS t2 ON t1.program_id = t2.program_id "
        "WHERE t2.department = 'X'"
    )
    assert mend(read, ADVISING).changes == []
    assert mend(for_nothing, ADVISING).changes == []
    assert mend(outer, ADVISING).changes == ["t2.department read as t1.department"]


def test_a_column_no_table_of_a_joined_query_has_joins_the_table_that_has_it() -> None:
    """atis-24: `flight AS t1` has no airline_name, flight_stop neither; airline has it and
    shares airline_code with flight."""
    atis = Catalog(
        NAMESPACE,
        [
            table("flight", "flight_id", "airline_code", "from_airport"),
            table("flight_stop", "flight_id", "stop_number"),
            table("airline", "airline_code", "airline_name"),
        ],
    )
    query = (
        "SELECT t1.airline_name, COUNT(t2.stop_number) FROM flight AS t1 LEFT JOIN flight_stop AS t2 "
        "ON t1.flight_id = t2.flight_id WHERE t1.from_airport = 'ORD' GROUP BY t1.airline_name"
    )

    found = mend(query, atis)

    assert found.query == (
        "SELECT airline.airline_name, COUNT(t2.stop_number) FROM flight AS t1 LEFT JOIN flight_stop AS t2 "
        "ON t1.flight_id = t2.flight_id JOIN airline ON t1.airline_code = airline.airline_code "
        "WHERE t1.from_airport = 'ORD' GROUP BY airline.airline_name"
    )
    assert found.changes == ["flight has no airline_name: joined airline on airline_code"]


def test_a_join_of_a_number_with_a_text_reads_the_text_tables_key() -> None:
    """advising-05: course_offering.semester is a semester's id; semester.semester its name."""
    semesters = Catalog(
        NAMESPACE,
        [
            table("course_offering", "offering_id", "course_id", "semester"),
            table("semester", "semester_id", "semester"),
        ],
    )
    semesters.tables[0].columns["semester"] = "integer"
    query = (
        "SELECT co.course_id FROM course_offering AS co JOIN semester AS s ON co.semester = s.semester "
        "WHERE s.semester_id IN (1, 2)"
    )

    found = reroute_joins(query, semesters)

    assert found.query == (
        "SELECT co.course_id FROM course_offering AS co JOIN semester AS s ON co.semester = s.semester_id "
        "WHERE s.semester_id IN (1, 2)"
    )
    assert found.changes == ["co.semester holds numbers and s.semester text: joined on semester's key semester_id"]
    same = "SELECT co.course_id FROM course_offering AS co JOIN semester AS s ON co.semester = s.semester_id"
    assert reroute_joins(same, semesters).changes == []


AIRPORTS = Catalog(
    NAMESPACE,
    [
        table("airport", "airport_code", "airport_name", "state_code", "country_name"),
        table("city", "city_code", "city_name", "state_code"),
        table("state", "state_code", "state_name"),
    ],
)
ORLANDO = (
    "Which state code is Orlando International Airport in?\n\n"
    "Instructions: Filter airport, city, country names using ILIKE."
)


def test_filters_the_question_never_mentions_go_with_the_joins_read_only_for_them_when_one_cannot_run() -> None:
    """atis-26: the model adds filters on a city and a country nobody asked for; `country` is
    no dataset and `airport` has no `city_code`."""
    query = (
        "SELECT DISTINCT t1.state_code FROM airport AS t1 JOIN city AS t2 ON t1.city_code = t2.city_code "
        "JOIN country AS t3 ON t2.country_code = t3.country_code WHERE t1.airport_name ILIKE "
        "'Orlando International Airport' AND t2.city_name ILIKE 'IL' AND t3.country_name ILIKE 'United States'"
    )

    found = mend(query, AIRPORTS, ORLANDO)

    assert found.query == (
        "SELECT DISTINCT t1.state_code FROM airport AS t1 WHERE t1.airport_name ILIKE 'Orlando International Airport'"
    )
    assert found.changes == [
        "filters on text the question never mentions, one of which could not run, dropped: "
        "t2.city_name ILIKE 'IL'; t3.country_name ILIKE 'United States'",
        "the join of country, read for nothing else: dropped",
        "the join of city, read for nothing else: dropped",
    ]
    assert mend(query, AIRPORTS).changes == []  # without the question the rule is off


def test_filters_the_question_mentions_or_that_all_run_are_left_to_the_model() -> None:
    runs = (
        "SELECT t1.state_code FROM airport AS t1 JOIN state AS t2 ON t1.state_code = t2.state_code "
        "WHERE t1.airport_name ILIKE '%Orlando%' AND t2.state_name = 'Florida'"
    )
    said = (
        "SELECT t1.state_code FROM airport AS t1 JOIN country AS t3 ON t1.country_name = t3.name "
        "WHERE t1.airport_name ILIKE '%Orlando International%' AND t3.name = 'United State'"
    )
    assert mend(runs, AIRPORTS, ORLANDO).changes == []
    plural = "Which airports of the United States are called Orlando International?"
    assert mend(said, AIRPORTS, plural).query == said
    assert mend(said, AIRPORTS, ORLANDO).changes[0].startswith("filters on text the question never mentions")


DEPARTURES = Catalog(
    NAMESPACE,
    [
        TableInfo(
            name="flight",
            dataset_id="flight",
            namespace=NAMESPACE,
            physical="flight",
            description="",
            columns={"flight_id": "integer", "from_airport": "text", "to_airport": "text", "airline_code": "text"},
            column_descriptions={
                "from_airport": "The 3-letter airport code for the departure location",
                "to_airport": "The 3-letter airport code for the arrival location",
            },
        ),
        table("airport", "airport_code", "airport_name"),
    ],
)


def test_a_name_two_columns_share_a_word_of_is_read_as_the_one_the_question_describes() -> None:
    """atis-10: flight has no airport_code; from_airport and to_airport share its word, and the
    question says "depart from", which from_airport's name and description say."""
    query = "SELECT airport_code, COUNT(*) FROM flight GROUP BY airport_code"

    found = mend(query, DEPARTURES, "How many flights depart from each airport code?")

    assert found.query == "SELECT from_airport, COUNT(*) FROM flight GROUP BY from_airport"
    assert found.changes == ["flight has no airport_code: read from_airport, which the question describes"]
    arriving = mend(query, DEPARTURES, "How many flights arrive at each airport code?")
    assert arriving.query == "SELECT to_airport, COUNT(*) FROM flight GROUP BY to_airport"


def test_no_reading_when_the_question_describes_no_one_column_best() -> None:
    query = "SELECT airport_code, COUNT(*) FROM flight GROUP BY airport_code"
    assert mend(query, DEPARTURES, "How many flights are there per airport code?").changes == []
    assert mend(query, DEPARTURES).changes == []  # no question, no reading


WORK_FIELDS = Catalog(
    NAMESPACE,
    [
        table("author", "aid", "name", "oid"),
        table("organization", "oid", "name", "continent"),
        table("domain", "did", "name"),
        table("domain_author", "aid", "did"),
        table("domain_publication", "did", "pid"),
        table("publication", "pid", "title"),
    ],
)


def test_a_filter_of_a_text_another_column_stores_reads_that_column_joined_by_the_one_path() -> None:
    """academic-21: organizations whose name is 'Machine Learning' are none; the domain is."""
    query = (
        "SELECT DISTINCT T2.name FROM author AS T1 JOIN organization AS T2 ON T1.oid = T2.oid "
        "WHERE T2.name = 'machine learning'"
    )
    found = filter_where_stored(query, WORK_FIELDS, "machine learning", ("domain", "name"), "Machine Learning")
    assert found.query == (
        "SELECT DISTINCT T2.name FROM author AS T1 JOIN organization AS T2 ON T1.oid = T2.oid "
        "JOIN domain_author ON T1.aid = domain_author.aid JOIN domain ON domain_author.did = domain.did "
        "WHERE domain.name = 'Machine Learning'"
    )
    assert found.changes == [
        "T2.name holds no 'machine learning'; domain.name holds 'Machine Learning': the filter reads it"
    ]
    # A table the SELECT reads is read through its alias; a key it holds joins the table on it.
    same = filter_where_stored(
        "SELECT a.aid FROM author AS a WHERE a.name = 'Europe'",
        WORK_FIELDS,
        "Europe",
        ("organization", "continent"),
        "Europe",
    )
    assert same.query == (
        "SELECT a.aid FROM author AS a JOIN organization ON a.oid = organization.oid WHERE organization.continent = 'Europe'"
    )


def test_a_filter_with_no_path_or_two_to_the_column_that_stores_its_text_is_left_alone() -> None:
    lone = "SELECT title FROM publication WHERE title = 'Europe'"
    assert filter_where_stored(lone, WORK_FIELDS, "Europe", ("organization", "continent"), "Europe").changes == []
    two = (
        "SELECT a.name FROM author AS a JOIN domain_author AS da ON a.aid = da.aid "
        "JOIN domain_publication AS dp ON da.did = dp.did WHERE a.name = 'AI'"
    )
    assert filter_where_stored(two, WORK_FIELDS, "AI", ("domain", "name"), "AI").changes == []  # da.did, dp.did
