"""`divide_as_fractions`, a before-run rule of the query alone (moved out of tools/shape.py as
it was, issue 47).

**Whole-number division.** `capacity / range_miles` of two integer columns is 0 in both
stores; a ratio, share or average asked in words is meant as a fraction. The dividend of
a division becomes `CAST(... AS DOUBLE PRECISION)` unless one side is a decimal already;
a division by a constant (`/ 60`: a unit's conversion) stays as written.
"""

from __future__ import annotations

from sqlglot import exp


def divide_as_fractions(tree: exp.Query) -> str:
    changed = 0
    for division in list(tree.find_all(exp.Div)):
        dividend, divisor = division.this, division.expression
        if isinstance(divisor, exp.Literal) or _is_fraction(dividend) or _is_fraction(divisor):
            continue  # a division by a constant converts units, as its writer meant
        division.set("this", exp.cast(dividend.copy(), exp.DataType.Type.DOUBLE))
        changed += 1
    return f"divided as fractions ({changed} division{'s' if changed > 1 else ''})" if changed else ""


def _is_fraction(node: exp.Expr) -> bool:
    """A decimal literal or a cast to a non-integer number: its division is already exact."""
    if isinstance(node, exp.Paren):
        return _is_fraction(node.this)
    if isinstance(node, exp.Literal):
        return not node.is_string and "." in node.this
    if isinstance(node, exp.Cast):
        return node.to.this in exp.DataType.REAL_TYPES
    return False
