"""Builds the public dev eval suite (datawell/evals/suites/dev/) from defog's data.

Run once by hand; its output is committed. Inputs:
- the PyPI package `defog-data` 0.1.1 (installed): the databases `academic`, `advising`
  and `atis` only (PostgreSQL dumps and column descriptions); the package's other
  databases are a held-out test and are never opened here;
- defog's sql-eval repository (`data/questions_gen_postgres.csv`), filtered by `db_name`
  to those three databases before any question is read;
- `--postgres URL` (optional): a PostgreSQL server where the three dumps are loaded into
  scratch databases with `psql`, to record what sql-eval's own gold queries return on the
  same data (`sql_eval_gold.jsonl`, which tests/evals/test_dev_suite.py compares with the
  translated queries' results on the fixtures).

Each question's gold query is translated to Datawell's QL by hand (TRANSLATIONS below).
sql-eval writes `{a, b}` where either column (or both) is a right answer; a translation
uses the same notation and is expanded here: the case's gold query selects every listed
column, and each smaller non-empty subset is an alternative gold query.
"""

from __future__ import annotations

import argparse
import csv
import io
import itertools
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any

import defog_data
import yaml

DATABASES = ("academic", "advising", "atis")
SUITE = Path(__file__).resolve().parent.parent / "datawell" / "evals" / "suites" / "dev"
TYPES = {
    "bigint": "integer",
    "integer": "integer",
    "text": "text",
    "boolean": "boolean",
    "numeric": "real",
    "date": "timestamp",
    "time without time zone": "text",
}
DIFFICULTY = {
    "group_by": "easy",
    "order_by": "easy",
    "table_join": "medium",
    "ratio": "medium",
    "instruct": "medium",
    "date_functions": "hard",
}


@dataclass
class Translation:
    """One question's gold in the QL. `ql`: the gold (with sql-eval's `{a, b}` notation);
    `more`: other right answers (sql-eval's further `;` variants, translated); `variant`:
    which of sql-eval's `;`-separated gold queries the translation is checked against;
    `unchecked`: why it cannot be compared with sql-eval's result recorded at build time."""

    ql: str
    more: list[str] = field(default_factory=list)
    variant: int = 0
    unchecked: str = ""


CURRENT_DATE = "depends on today's date (CURRENT_DATE): checked only that it runs"

# Keyed by the question's row among the sql-eval rows of the three databases, in file order.
TRANSLATIONS: dict[int, Translation] = {
    # ------------------------------------------------------------------ academic
    0: Translation(
        "SELECT {author.name, author.aid} FROM author WHERE author.aid IN (SELECT domain_author.aid "
        "FROM domain_author WHERE domain_author.did IN (SELECT domain.did FROM domain WHERE domain.name "
        "IN ('Machine Learning', 'Data Science')) GROUP BY domain_author.aid "
        "HAVING COUNT(DISTINCT domain_author.did) = 2)"
    ),
    1: Translation(
        "SELECT {author.name, author.aid}, SUM(publication.citation_num) AS total_citations FROM author "
        "JOIN writes ON author.aid = writes.aid JOIN publication ON writes.pid = publication.pid "
        "GROUP BY {} ORDER BY total_citations DESC NULLS LAST",
        more=[
            "SELECT {a.aid, a.name}, COALESCE(SUM(p.citation_num), 0) AS total_citations FROM author a "
            "LEFT JOIN writes w ON a.aid = w.aid LEFT JOIN publication p ON w.pid = p.pid GROUP BY {}"
        ],
    ),
    2: Translation(
        "SELECT publication.year, COUNT(DISTINCT publication.pid) AS total_publications FROM publication "
        "GROUP BY publication.year ORDER BY publication.year"
    ),
    3: Translation(
        "SELECT {domain.name, domain.did}, AVG(publication.reference_num) AS average_references "
        "FROM domain_publication JOIN publication ON domain_publication.pid = publication.pid "
        "JOIN domain ON domain.did = domain_publication.did GROUP BY {}"
    ),
    4: Translation(
        "SELECT publication.year, AVG(publication.citation_num) AS average_citations FROM publication "
        "GROUP BY publication.year ORDER BY publication.year NULLS LAST"
    ),
    5: Translation(
        "SELECT publication.title FROM publication ORDER BY publication.citation_num DESC NULLS LAST LIMIT 1"
    ),
    6: Translation(
        "SELECT {d.name, d.did}, COUNT(DISTINCT a.aid) AS author_count FROM author a "
        "JOIN domain_author da ON a.aid = da.aid JOIN domain d ON da.did = d.did GROUP BY {} "
        "ORDER BY author_count DESC LIMIT 5"
    ),
    7: Translation("SELECT publication.title FROM publication ORDER BY publication.reference_num DESC LIMIT 3"),
    8: Translation(
        "SELECT {publication.title, publication.pid}, publication.citation_num FROM publication "
        "ORDER BY publication.citation_num DESC LIMIT 3"
    ),
    9: Translation("SELECT DISTINCT publication.title FROM publication ORDER BY publication.title ASC NULLS LAST"),
    10: Translation(
        "SELECT CAST(COUNT(DISTINCT publication.pid) AS REAL) / NULLIF(COUNT(DISTINCT author.aid), 0) "
        "AS publication_to_author_ratio FROM publication, author"
    ),
    11: Translation(
        "SELECT CAST(COUNT(DISTINCT CASE WHEN cid IS NOT NULL THEN pid END) AS REAL) / "
        "NULLIF(COUNT(DISTINCT CASE WHEN jid IS NOT NULL THEN pid END), 0) AS ratio FROM publication"
    ),
    12: Translation(
        "SELECT domain_publication.did, CAST(COUNT(DISTINCT domain_publication.pid) AS REAL) / "
        "NULLIF(COUNT(DISTINCT domain_keyword.kid), 0) AS publication_to_keyword_ratio FROM domain_publication "
        "LEFT JOIN domain_keyword ON domain_publication.did = domain_keyword.did GROUP BY domain_publication.did "
        "ORDER BY publication_to_keyword_ratio DESC NULLS LAST",
        more=[
            "SELECT d.did, COALESCE(CAST(COUNT(DISTINCT dp.pid) AS REAL) / NULLIF(COUNT(DISTINCT dk.kid), 0), 0) "
            "AS publication_to_keyword_ratio FROM domain d LEFT JOIN domain_publication dp ON d.did = dp.did "
            "LEFT JOIN domain_keyword dk ON d.did = dk.did GROUP BY d.did "
            "ORDER BY publication_to_keyword_ratio DESC NULLS LAST"
        ],
    ),
    13: Translation(
        "SELECT publication.year, COUNT(DISTINCT publication.pid) AS num_publications, "
        "COUNT(DISTINCT publication.jid) AS num_journals, CAST(COUNT(DISTINCT publication.pid) AS REAL) / "
        "NULLIF(COUNT(DISTINCT publication.jid), 0) AS ratio FROM publication GROUP BY publication.year "
        "ORDER BY publication.year"
    ),
    14: Translation(
        "SELECT organization.continent, CAST(COUNT(DISTINCT author.aid) AS REAL) / "
        "NULLIF(COUNT(DISTINCT organization.oid), 0) AS ratio FROM organization "
        "LEFT JOIN author ON author.oid = organization.oid GROUP BY organization.continent "
        "ORDER BY ratio DESC NULLS LAST"
    ),
    15: Translation(
        "SELECT {author.name, author.aid}, COUNT(publication.pid) AS publication_count FROM writes "
        "JOIN author ON writes.aid = author.aid JOIN publication ON writes.pid = publication.pid "
        "WHERE publication.year = 2021 GROUP BY {} ORDER BY publication_count DESC NULLS LAST LIMIT 1"
    ),
    16: Translation(
        "SELECT {conference.name, conference.cid}, COUNT(publication.pid) AS total_publications FROM publication "
        "JOIN conference ON publication.cid = conference.cid GROUP BY {} ORDER BY total_publications DESC"
    ),
    17: Translation(
        "SELECT {journal.name, journal.jid}, COUNT(publication.pid) AS total_publications FROM publication "
        "JOIN journal ON publication.jid = journal.jid GROUP BY {} ORDER BY total_publications DESC NULLS LAST",
        more=[
            "SELECT {journal.name, journal.jid}, COUNT(publication.pid) AS total_publications FROM journal "
            "LEFT JOIN publication ON journal.jid = publication.jid GROUP BY {} "
            "ORDER BY total_publications DESC NULLS LAST"
        ],
    ),
    18: Translation(
        "SELECT conference.name, COUNT(publication.pid) AS num_publications FROM publication "
        "JOIN conference ON publication.cid = conference.cid GROUP BY conference.name, conference.cid "
        "ORDER BY num_publications DESC NULLS LAST"
    ),
    19: Translation(
        "SELECT COUNT(DISTINCT publication.pid) FROM publication JOIN journal ON publication.jid = journal.jid "
        "WHERE journal.name ILIKE 'J%'"
    ),
    20: Translation(
        "SELECT DISTINCT {organization.name, organization.oid} FROM organization "
        "JOIN author ON organization.oid = author.oid JOIN writes ON author.aid = writes.aid "
        "JOIN domain_publication ON writes.pid = domain_publication.pid "
        "JOIN domain ON domain_publication.did = domain.did WHERE domain.name = 'Machine Learning'"
    ),
    21: Translation(
        "SELECT DISTINCT {a2.name, a2.aid} FROM author a1 JOIN domain_author da1 ON a1.aid = da1.aid "
        "JOIN domain_author da2 ON da1.did = da2.did JOIN author a2 ON da2.aid = a2.aid "
        "WHERE a1.name ILIKE '%martin%'",
        more=[
            "SELECT DISTINCT {a2.name, a2.aid} FROM author a1 JOIN domain_author da1 ON a1.aid = da1.aid "
            "JOIN domain_author da2 ON da1.did = da2.did JOIN author a2 ON da2.aid = a2.aid "
            "WHERE a1.name ILIKE '%martin%' AND a2.name NOT ILIKE '%martin%'"
        ],
    ),
    22: Translation("SELECT DISTINCT {name, aid} FROM author WHERE oid IS NULL"),
    23: Translation(
        "SELECT DISTINCT {publication.title, publication.pid} FROM domain "
        "JOIN domain_author ON domain.did = domain_author.did JOIN writes ON domain_author.aid = writes.aid "
        "JOIN publication ON writes.pid = publication.pid JOIN domain_conference ON domain.did = domain_conference.did "
        "WHERE domain.name ILIKE '%Sociology%' AND publication.year = 2020 AND publication.cid = domain_conference.cid"
    ),
    24: Translation(
        "SELECT DISTINCT author.name FROM author JOIN writes ON author.aid = writes.aid "
        "JOIN publication ON writes.pid = publication.pid "
        "JOIN domain_publication ON publication.pid = domain_publication.pid "
        "JOIN domain ON domain_publication.did = domain.did WHERE domain.name ILIKE '%computer%science%'"
    ),
    # ------------------------------------------------------------------ advising
    25: Translation(
        "SELECT to_char(date_trunc('month', s.admit_term), 'YYYY-MM') AS month, COUNT(*) AS total_students "
        "FROM student s GROUP BY month ORDER BY total_students DESC LIMIT 1",
        variant=1,
    ),
    26: Translation(
        "SELECT AVG(julianday(predicted_graduation_semester) - julianday(admit_term)) "
        "AS average_predicted_time_to_graduation FROM student"
    ),
    27: Translation(
        "SELECT COUNT(*) AS num_students_graduated FROM student "
        "WHERE predicted_graduation_semester >= date_trunc('year', current_date) - INTERVAL '10 years'",
        unchecked=CURRENT_DATE,
    ),
    28: Translation(
        "SELECT CAST(julianday(current_date) - julianday(MAX(admit_term)) AS INTEGER) "
        "AS duration_since_last_admitted_student FROM student",
        unchecked=CURRENT_DATE,
    ),
    29: Translation(
        "SELECT DISTINCT co.course_id FROM course_offering co JOIN offering_instructor oi "
        "ON co.offering_id = oi.offering_id WHERE (co.semester = 1 OR co.semester = 2) "
        "AND co.end_time < '13:00:00' AND co.thursday IS NOT NULL"
    ),
    30: Translation(
        "SELECT course_tags_count.course_id, SUM(course_tags_count.hilarious) AS total_hilarious "
        "FROM course_tags_count GROUP BY course_tags_count.course_id"
    ),
    31: Translation(
        "SELECT {i.name, i.instructor_id}, AVG(c.clarity_score) FROM course c "
        "JOIN course_offering co ON c.course_id = co.course_id "
        "JOIN offering_instructor oi ON co.offering_id = oi.offering_id "
        "JOIN instructor i ON oi.instructor_id = i.instructor_id GROUP BY {}"
    ),
    32: Translation(
        "SELECT course_offering.has_final_exam, COUNT(offering_id) AS num_courses FROM course_offering "
        "GROUP BY course_offering.has_final_exam",
        more=[
            "SELECT COUNT(CASE WHEN co.has_final_exam THEN 1 END) AS num_with_final_exam, "
            "COUNT(CASE WHEN NOT co.has_final_exam THEN 1 END) AS num_without_final_exam FROM course_offering co"
        ],
    ),
    33: Translation(
        "SELECT course.department, COUNT(DISTINCT course.course_id) AS num_courses FROM course "
        "GROUP BY course.department ORDER BY num_courses DESC NULLS LAST"
    ),
    34: Translation(
        "SELECT course_offering.semester, COUNT(DISTINCT course_offering.course_id) AS num_courses "
        "FROM course_offering GROUP BY course_offering.semester ORDER BY course_offering.semester",
        more=[
            "SELECT semester.semester_id, COUNT(DISTINCT course_offering.course_id) AS num_courses FROM semester "
            "LEFT JOIN course_offering ON semester.semester_id = course_offering.semester "
            "GROUP BY semester.semester_id"
        ],
    ),
    35: Translation(
        "SELECT {course.name, course.course_id, course.number}, course.num_enrolled FROM course "
        "ORDER BY course.num_enrolled DESC NULLS LAST LIMIT 1"
    ),
    36: Translation(
        "SELECT course_tags_count.course_id, course_tags_count.participation FROM course_tags_count "
        "ORDER BY course_tags_count.participation DESC NULLS LAST"
    ),
    37: Translation(
        "SELECT {course.course_id, course.name, course.number}, SUM(course.num_enrolled) AS total_students "
        "FROM course GROUP BY {} ORDER BY total_students DESC NULLS LAST"
    ),
    38: Translation(
        "SELECT student.student_id, student.total_credit FROM student ORDER BY student.total_credit DESC NULLS LAST"
    ),
    39: Translation(
        "SELECT instructor.name, COUNT(offering_instructor.offering_id) AS num_courses FROM offering_instructor "
        "JOIN instructor ON offering_instructor.instructor_id = instructor.instructor_id "
        "GROUP BY instructor.name ORDER BY num_courses DESC LIMIT 1"
    ),
    40: Translation(
        "SELECT CAST(SUM(CASE WHEN c.has_exams THEN c.num_enrolled ELSE 0 END) AS REAL) / "
        "SUM(CASE WHEN NOT c.has_exams THEN c.num_enrolled ELSE 0 END) AS ratio FROM course c"
    ),
    41: Translation(
        "SELECT course_tags_count.course_id, CAST(course_tags_count.clear_grading AS REAL) / "
        "NULLIF(course_tags_count.good_feedback, 0) AS ratio FROM course_tags_count "
        "ORDER BY course_tags_count.course_id NULLS LAST"
    ),
    42: Translation(
        "SELECT course_offering.semester, CAST(SUM(CASE WHEN course.has_projects THEN 1 ELSE 0 END) AS REAL) / "
        "NULLIF(SUM(CASE WHEN course.has_exams THEN 1 ELSE 0 END), 0) AS ratio FROM course "
        "JOIN course_offering ON course.course_id = course_offering.course_id GROUP BY course_offering.semester "
        "ORDER BY course_offering.semester NULLS LAST"
    ),
    43: Translation(
        "SELECT course.course_id, CAST(course.helpfulness_score AS REAL) / NULLIF(course.clarity_score, 0) "
        "AS ratio FROM course"
    ),
    44: Translation(
        "SELECT {course.course_id, course.name, course.number}, CAST(course.num_enrolled AS REAL) / "
        "NULLIF(course.num_reviews, 0) AS student_review_ratio FROM course ORDER BY student_review_ratio NULLS LAST"
    ),
    45: Translation(
        "SELECT DISTINCT {course.name, course.course_id, course.number} FROM student "
        "JOIN student_record ON student.student_id = student_record.student_id "
        "JOIN program ON student.program_id = program.program_id "
        "JOIN course ON student_record.course_id = course.course_id WHERE program.name ILIKE '%Computer Science%'"
    ),
    46: Translation(
        "SELECT DISTINCT {course.name, course.course_id, course.number} FROM course_offering "
        "JOIN course ON course_offering.course_id = course.course_id "
        "WHERE course_offering.has_final_project = true AND course_offering.has_final_exam = true"
    ),
    47: Translation(
        "SELECT COUNT(DISTINCT student_record.student_id) AS total_students FROM student_record "
        "JOIN course_offering ON student_record.course_id = course_offering.course_id "
        "WHERE course_offering.has_final_project = true OR course_offering.has_final_exam = true"
    ),
    48: Translation(
        "SELECT {program.name, program.program_id}, SUM(student.total_credit) AS total_credits FROM student "
        "JOIN program ON student.program_id = program.program_id GROUP BY {}"
    ),
    49: Translation(
        "SELECT {program.name, program.program_id}, COUNT(student.student_id) AS number_of_students FROM student "
        "JOIN program ON student.program_id = program.program_id WHERE student.declare_major IS NOT NULL "
        "GROUP BY {} ORDER BY number_of_students DESC"
    ),
    50: Translation(
        "SELECT student.firstname, student.lastname FROM student WHERE student.minor IS NOT NULL "
        "ORDER BY student.lastname NULLS LAST"
    ),
    51: Translation(
        "SELECT AVG(student.total_gpa) FROM student JOIN program ON student.program_id = program.program_id "
        "WHERE LOWER(program.name) = 'mathematics'"
    ),
    52: Translation(
        "SELECT course.name FROM course WHERE course.department ILIKE '%Computer Science%' "
        "ORDER BY course.name ASC NULLS LAST"
    ),
    53: Translation(
        "SELECT {course.name, course.course_id, course.number}, course.easiness_score FROM course "
        "WHERE course.department = 'Computer Science'"
    ),
    54: Translation(
        "SELECT DISTINCT student_id FROM student_record WHERE student_record.how = 'in-person' "
        "AND student_record.grade IN ('A', 'C')"
    ),
    # ------------------------------------------------------------------ atis
    55: Translation(
        "SELECT {flight.flight_number, flight.flight_id}, (arrival_time - departure_time) / 60 AS duration_minutes "
        "FROM flight ORDER BY duration_minutes LIMIT 1"
    ),
    56: Translation(
        "SELECT AVG(arrival_time - departure_time) / 60 - 34 AS average_duration FROM flight",
        variant=1,
    ),
    57: Translation(
        "SELECT month.month_name, COUNT(*) AS departure_count FROM flight JOIN month "
        "ON EXTRACT(MONTH FROM to_timestamp(flight.departure_time)) = month.month_number "
        "GROUP BY month.month_name, month.month_number ORDER BY month.month_number",
        more=[
            "SELECT EXTRACT(MONTH FROM to_timestamp(flight.departure_time)) AS month, COUNT(*) AS num_departures "
            "FROM flight GROUP BY month ORDER BY month",
            "SELECT to_char(to_timestamp(flight.departure_time), 'YYYY-MM') AS month, COUNT(*) AS num_departures "
            "FROM flight GROUP BY month ORDER BY month",
        ],
    ),
    58: Translation(
        "SELECT to_char(to_timestamp(departure_time), 'HH24:MI') AS earliest_departure_time FROM flight "
        "ORDER BY earliest_departure_time LIMIT 1"
    ),
    59: Translation(
        "SELECT CAST(ABS(julianday(current_date) - julianday(to_timestamp(MIN(departure_time)))) AS INTEGER) "
        "AS diff_in_days FROM flight",
        unchecked=CURRENT_DATE,
    ),
    60: Translation(
        "SELECT fare.fare_airline, SUM(fare.round_trip_cost) AS total_round_trip_cost FROM fare "
        "GROUP BY fare.fare_airline ORDER BY total_round_trip_cost DESC"
    ),
    61: Translation(
        "SELECT fare.fare_airline, AVG(fare.round_trip_cost) AS average_cost FROM fare "
        "WHERE fare.from_airport = 'LAX' AND fare.to_airport = 'ORD' GROUP BY fare.fare_airline "
        "ORDER BY average_cost DESC NULLS LAST",
        more=[
            "SELECT airline.airline_name, AVG(fare.round_trip_cost) AS avg_round_trip_cost FROM fare "
            "JOIN airline ON fare.fare_airline = airline.airline_code WHERE fare.from_airport = 'LAX' "
            "AND fare.to_airport = 'ORD' GROUP BY airline.airline_name ORDER BY avg_round_trip_cost DESC"
        ],
    ),
    62: Translation(
        "SELECT f.from_airport, f.to_airport, AVG(f.one_direction_cost) AS average_cost FROM fare f "
        "GROUP BY f.from_airport, f.to_airport ORDER BY f.from_airport, f.to_airport NULLS LAST"
    ),
    63: Translation(
        "SELECT food_service.compartment, COUNT(food_service.meal_number) AS number_of_meals FROM food_service "
        "GROUP BY food_service.compartment ORDER BY number_of_meals DESC NULLS LAST"
    ),
    64: Translation(
        "SELECT airport.airport_code, COUNT(flight.from_airport) AS num_departures FROM airport "
        "LEFT JOIN flight ON airport.airport_code = flight.from_airport AND flight.connections = 0 "
        "GROUP BY airport.airport_code",
        more=[
            "SELECT airport.airport_code, COUNT(flight.from_airport) AS num_departures FROM airport "
            "JOIN flight ON airport.airport_code = flight.from_airport WHERE flight.connections = 0 "
            "GROUP BY airport.airport_code"
        ],
    ),
    65: Translation(
        "SELECT flight.flight_id, (flight.arrival_time - flight.departure_time) AS duration FROM flight "
        "WHERE to_airport = 'ORD' ORDER BY duration ASC NULLS LAST"
    ),
    66: Translation(
        "SELECT {airport.airport_name, airport.airport_code}, airport.minimum_connect_time FROM airport "
        "ORDER BY airport.minimum_connect_time ASC NULLS LAST"
    ),
    67: Translation("SELECT aircraft.aircraft_code FROM aircraft ORDER BY pay_load DESC NULLS LAST LIMIT 1"),
    68: Translation(
        "SELECT {airline.airline_name, airline.airline_code}, COUNT(flight.flight_id) AS number_of_flights "
        "FROM flight JOIN airline ON flight.airline_code = airline.airline_code GROUP BY {} "
        "ORDER BY number_of_flights DESC NULLS LAST LIMIT 2"
    ),
    69: Translation(
        "SELECT aircraft.aircraft_code FROM aircraft WHERE aircraft.cruising_speed > 200 "
        "ORDER BY aircraft.aircraft_code ASC NULLS LAST"
    ),
    70: Translation(
        "SELECT CAST(aircraft.range_miles AS REAL) / NULLIF(aircraft.pay_load, 0) AS range_to_payload_ratio "
        "FROM aircraft"
    ),
    71: Translation(
        "SELECT fare.fare_id, CAST(fare.one_direction_cost AS REAL) / NULLIF(fare.round_trip_cost, 0) AS cost_ratio "
        "FROM fare ORDER BY cost_ratio"
    ),
    72: Translation(
        "SELECT aircraft.aircraft_code, CAST(aircraft.capacity AS REAL) / NULLIF(aircraft.range_miles, 0) "
        "AS capacity_range_ratio FROM aircraft"
    ),
    73: Translation(
        "SELECT flight.airline_code, CAST(SUM(CASE WHEN flight.stops > 0 THEN 1 ELSE 0 END) AS REAL) / "
        "NULLIF(COUNT(*), 0) AS ratio FROM flight GROUP BY flight.airline_code"
    ),
    74: Translation(
        "SELECT aircraft.manufacturer, AVG(CAST(aircraft.cruising_speed AS REAL) / NULLIF(aircraft.pay_load, 0)) "
        "AS speed_payload_ratio FROM aircraft GROUP BY aircraft.manufacturer ORDER BY speed_payload_ratio DESC NULLS LAST"
    ),
    75: Translation(
        "SELECT flight.flight_id, food_service.meal_description FROM flight "
        "JOIN food_service ON flight.meal_code = food_service.meal_code "
        "WHERE LOWER(food_service.compartment) LIKE '%first class%'"
    ),
    76: Translation(
        "SELECT DISTINCT {airline.airline_name, airline.airline_code} FROM flight_stop "
        "JOIN airport ON flight_stop.stop_airport = airport.airport_code "
        "JOIN flight ON flight_stop.flight_id = flight.flight_id "
        "JOIN airline ON flight.airline_code = airline.airline_code WHERE airport.airport_location ILIKE '%Dallas%'"
    ),
    77: Translation(
        "SELECT DISTINCT {airline.airline_name, airline.airline_code} FROM flight "
        "JOIN airline ON flight.airline_code = airline.airline_code "
        "WHERE flight.from_airport = 'LAX' AND flight.to_airport = 'ORD'"
    ),
    78: Translation(
        "SELECT {airline.airline_name, airline.airline_code}, flight.stops FROM flight "
        "JOIN airline ON flight.airline_code = airline.airline_code "
        "WHERE flight.from_airport = 'ORD' AND flight.to_airport = 'JFK' ORDER BY flight.stops NULLS LAST"
    ),
    79: Translation(
        "SELECT DISTINCT {airline.airline_name, airline.airline_code} FROM airline "
        "WHERE airline.airline_code NOT IN (SELECT flight.airline_code FROM flight "
        "WHERE flight.from_airport = 'JFK' OR flight.to_airport = 'JFK' OR flight.stops > 0)"
    ),
    80: Translation("SELECT state_code FROM airport WHERE airport_name ILIKE '%Orlando International Airport%'"),
    81: Translation(
        "SELECT {flight.flight_number, flight.flight_id} FROM flight "
        "WHERE LOWER(flight.flight_days) LIKE '%mon%' AND LOWER(flight.flight_days) LIKE '%wed%'"
    ),
    82: Translation(
        "SELECT SUM(fare.round_trip_cost) AS total_round_trip_cost FROM fare "
        "WHERE fare.from_airport = 'JFK' AND fare.to_airport = 'LAX'"
    ),
    83: Translation("SELECT minimum_connect_time FROM airport WHERE airport_code = 'JFK'"),
    84: Translation(
        "SELECT COUNT(DISTINCT flight_fare.flight_id) FROM flight_fare "
        "JOIN fare ON flight_fare.fare_id = fare.fare_id WHERE fare.round_trip_required = 'Yes'"
    ),
}

# Questions whose gold ORDER BY leaves ties on the data: rows compared as sets.
TIES = {12, 16, 18, 33, 60, 71}
# Four instructors tie at one course each; sql-eval's LIMIT 1 returns any of them.
INSTRUCTORS = ("John Smith", "Jane Doe", "Gilbert Strang", "Brendan Burns")
TRANSLATIONS[39].unchecked = "four instructors tie at one course each: any of them is right"
TRANSLATIONS[39].more = [
    f"SELECT instructor.name, COUNT(offering_instructor.offering_id) AS num_courses FROM offering_instructor "
    f"JOIN instructor ON offering_instructor.instructor_id = instructor.instructor_id "
    f"WHERE instructor.name = '{name}' GROUP BY instructor.name"
    for name in INSTRUCTORS
]

BRACES = re.compile(r"\{([^{}]*)\}")


def expand(query: str) -> list[str]:
    """sql-eval's `{a, b}`: the query with every column, then with each smaller non-empty
    subset; a bare `{}` (in GROUP BY) takes the same columns."""
    found = [m for m in BRACES.finditer(query) if m.group(1).strip()]
    if not found:
        return [query]
    columns = [c.strip() for c in found[0].group(1).split(",")]
    subsets = [s for size in range(len(columns), 0, -1) for s in itertools.combinations(columns, size)]
    return [BRACES.sub(", ".join(subset), query) for subset in subsets]


def questions(repo: Path) -> list[dict[str, str]]:
    """sql-eval's rows of the three databases, filtered by db_name before anything else."""
    text = subprocess.run(
        ["git", "-C", str(repo), "show", "HEAD:data/questions_gen_postgres.csv"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [row for row in csv.DictReader(io.StringIO(text)) if row["db_name"] in DATABASES]


def copy_blocks(dump: str) -> dict[str, tuple[list[str], list[list[str | None]]]]:
    """The `COPY public.table (columns) FROM stdin;` blocks of a pg_dump: columns and rows."""
    tables: dict[str, tuple[list[str], list[list[str | None]]]] = {}
    lines = iter(dump.splitlines())
    for line in lines:
        match = re.match(r"COPY public\.(\w+) \(([^)]*)\) FROM stdin;", line)
        if not match:
            continue
        columns = [c.strip() for c in match.group(2).split(",")]
        rows = []
        for data in lines:
            if data == "\\.":
                break
            rows.append([None if cell == "\\N" else _unescape(cell) for cell in data.split("\t")])
        tables[match.group(1)] = (columns, rows)
    return tables


def _unescape(cell: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), cell)


def write_fixture(database: str) -> dict[str, int]:
    """One fixture folder per database: a CSV per non-empty table and fixture.yaml."""
    package = Path(defog_data.__file__).parent / database
    described = json.loads((package / f"{database}.json").read_text())["table_metadata"]
    tables = copy_blocks((package / f"{database}.sql").read_text())
    folder = SUITE / "fixtures" / database
    folder.mkdir(parents=True, exist_ok=True)
    specs: dict[str, Any] = {}
    counts = {}
    for table, (columns, rows) in sorted(tables.items()):
        if not rows:
            continue
        meta = {c["column_name"]: c for c in described[table]}
        with (folder / f"{table}.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            for row in rows:
                writer.writerow(
                    ["" if v is None else _cell(v, meta[c]["data_type"]) for c, v in zip(columns, row, strict=True)]
                )
        specs[table] = {
            "description": f"The {table} table of the {database} database.",
            "file": f"{table}.csv",
            "fields": {
                c: {"type": TYPES[meta[c]["data_type"]], "description": meta[c]["column_description"]} for c in columns
            },
        }
        counts[table] = len(rows)
    fixture = {"description": f"defog-data's {database} database (defog-data 0.1.1).", "datasets": specs}
    (folder / "fixture.yaml").write_text(yaml.safe_dump(fixture, sort_keys=False, width=120), encoding="utf-8")
    return counts


def _cell(value: str, data_type: str) -> str:
    if data_type == "boolean":
        return {"t": "true", "f": "false"}.get(value, value)
    return value


def case_of(index: int, row: dict[str, str], translation: Translation, number: int) -> dict[str, Any]:
    question = row["question"].strip()
    if row["instructions"].strip():
        question += "\n\nInstructions: " + row["instructions"].strip()
    gold, *subsets = expand(translation.ql)
    alternatives = subsets + [q for more in translation.more for q in expand(more)]
    return {
        "id": f"{row['db_name']}-{number:02d}",
        "description": f"sql-eval questions_gen_postgres.csv, {row['db_name']} question {number} ({row['query_category']})",
        "vars": {"question": question, "namespace": row["db_name"]},
        "expected": {"query": gold, **({"alternatives": alternatives} if alternatives else {})},
        **(
            {"assert": [{"type": "execution-match", "order": "ignore", "extra_columns": True}]} if index in TIES else {}
        ),
        "tags": [row["query_category"]],
        "difficulty": DIFFICULTY[row["query_category"]],
    }


def sql_eval_gold(url: str, rows: list[dict[str, str]], cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Loads the dumps into scratch databases and runs sql-eval's gold (the chosen variant,
    every `{}` column) there: what the translation must return on the fixtures."""
    import psycopg

    package = Path(defog_data.__file__).parent
    for database in DATABASES:
        scratch = f"dev_suite_{database}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {scratch}")
            conn.execute(f"CREATE DATABASE {scratch}")
        subprocess.run(
            [
                "psql",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                _with_db(url, scratch),
                "-f",
                str(package / database / f"{database}.sql"),
            ],
            check=True,
            capture_output=True,
        )
    found = []
    for index, (row, case) in enumerate(zip(rows, cases, strict=True)):
        translation = TRANSLATIONS[index]
        if translation.unchecked:
            found.append({"id": case["id"], "unchecked": translation.unchecked})
            continue
        variants = [q.strip() for q in row["query"].split(";") if q.strip()]
        query = expand(variants[translation.variant])[0]
        with psycopg.connect(_with_db(url, f"dev_suite_{row['db_name']}")) as conn:
            cursor = conn.execute(query)
            names = [d.name for d in cursor.description or []]
            result = [dict(zip(names, [_json(v) for v in values], strict=True)) for values in cursor.fetchall()]
        found.append({"id": case["id"], "query": query, "rows": result})
    return found


def _with_db(url: str, database: str) -> str:
    return re.sub(r"/[^/]*$", f"/{database}", url.replace("postgresql+asyncpg://", "postgresql://"))


def _json(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sql-eval", type=Path, default=Path("/work/.mirror/defog-ai+sql-eval/repo"))
    parser.add_argument("--postgres", help="a PostgreSQL URL to record sql-eval's gold results")
    args = parser.parse_args()
    rows = questions(args.sql_eval)
    if sorted(TRANSLATIONS) != list(range(len(rows))):
        print(f"{len(rows)} questions, {len(TRANSLATIONS)} translations", file=sys.stderr)
        return 1
    for database in DATABASES:
        print(database, write_fixture(database))
    numbers: dict[str, int] = {}
    cases = []
    for index, row in enumerate(rows):
        numbers[row["db_name"]] = numbers.get(row["db_name"], 0) + 1
        cases.append(case_of(index, row, TRANSLATIONS[index], numbers[row["db_name"]]))
    with (SUITE / "cases.jsonl").open("w", encoding="utf-8") as handle:
        for case in cases:
            handle.write(json.dumps(case, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases")
    if args.postgres:
        with (SUITE / "sql_eval_gold.jsonl").open("w", encoding="utf-8") as handle:
            for item in sql_eval_gold(args.postgres, rows, cases):
                handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
