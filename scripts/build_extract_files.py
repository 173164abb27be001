"""Writes the extract suite's two binary files (datawell/evals/suites/extract/files/):
`invoices.pdf` (one page of text lines) and `sales.xlsx` (a title row and a header over two
rows, its group names merged over the columns below them). Run once by hand; the output is
committed. The other files of the suite are plain text, written by hand."""

from __future__ import annotations

from pathlib import Path

import openpyxl

from tests.ingest.support import pdf_bytes

FILES = Path(__file__).resolve().parent.parent / "datawell" / "evals" / "suites" / "extract" / "files"

INVOICES = """Accounts receivable - open and settled invoices, first quarter 2024
Invoice INV-2024-017 was issued on 5 March 2024 to Acme Ltd for 1,250.00 USD; it is paid.
Invoice INV-2024-018 was issued on 12 March 2024 to Globex Corp for 980.40 USD; it is not paid yet.
Invoice INV-2024-019 was issued on 28 March 2024 to Initech for 15,000.00 USD; it is paid.
Invoice INV-2024-020 was issued on 2 April 2024 to Acme Ltd for 310.75 USD; it is not paid yet."""

SALES = [
    ["Regional sales 2024 (revenue in EUR)", None, None, None, None],
    ["Region", "Q1", None, "Q2", None],
    [None, "Units", "Revenue", "Units", "Revenue"],
    ["North", 1200, 54000.5, 1350, 60750.0],
    ["South", 800, 36100.0, 910, 41220.25],
    ["East", 450, 20250.0, 500, 22500.0],
    ["West", 1020, 45900.75, 990, 44550.0],
]


def main() -> None:
    (FILES / "invoices.pdf").write_bytes(pdf_bytes([INVOICES]))
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    for row in SALES:
        sheet.append(row)
    sheet.merge_cells("A1:E1")
    sheet.merge_cells("A2:A3")
    sheet.merge_cells("B2:C2")
    sheet.merge_cells("D2:E2")
    workbook.save(FILES / "sales.xlsx")


if __name__ == "__main__":
    main()
