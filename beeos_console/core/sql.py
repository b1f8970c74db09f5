"""SQL text shared by set-based readers (the audit sweep, the agents' scorecard)."""

from __future__ import annotations


def skip_scan_sql(table: str, column: str) -> str:
    """The distinct values of an indexed column, one index probe each (a loose index scan).

    PostgreSQL has no skip scan: ``SELECT DISTINCT`` over a million rows reads them all,
    where this reads one index entry per distinct value.
    """
    return (
        f"WITH RECURSIVE v(x) AS ((SELECT {column} FROM {table} ORDER BY {column} LIMIT 1) "
        f"UNION ALL SELECT (SELECT {column} FROM {table} WHERE {column} > v.x "
        f"ORDER BY {column} LIMIT 1) FROM v WHERE v.x IS NOT NULL) "
        f"SELECT x FROM v WHERE x IS NOT NULL"
    )
