"""nl2ql: catalog → generate → check → (repair, bounded) → run → rows."""
