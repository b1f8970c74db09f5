"""Walk the audit log's hash chain (written by the database, see core migration 0010).

Each entry stores ``seq`` (1, 2, 3, … without gaps), the previous entry's
``digest`` and its own digest over its content and that link. An entry edited,
deleted or inserted past the app (by someone holding the owner role) breaks the
chain at the first such entry; ``verify`` names it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass

from django.db import connection
from django.utils import timezone

CHUNK = 5000

_ROWS = """
SELECT a.seq, a.id, a.prev_digest, a.digest, console_audit_digest(a)
  FROM console_auditentry a
 WHERE a.seq > %s
 ORDER BY a.seq
 LIMIT %s
"""


@dataclass(frozen=True)
class ChainCheck:
    ok: bool
    entries: int
    checked_at: dt.datetime
    broken_seq: int | None = None
    broken_id: int | None = None
    problem: str = ""

    def as_json(self) -> dict:
        data = asdict(self)
        data["checked_at"] = self.checked_at.isoformat()
        return data

    def describe(self) -> str:
        if self.ok:
            return f"audit log hash chain intact: {self.entries:,} entries"
        where = f"entry #{self.broken_seq} (id {self.broken_id})"
        return f"audit log hash chain BROKEN at {where}: {self.problem}"


def verify(chunk: int = CHUNK) -> ChainCheck:
    """Check every link, oldest first, in keyset chunks (flat memory)."""
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM console_auditentry WHERE seq IS NULL ORDER BY id LIMIT 1")
        unchained = cursor.fetchone()
        if unchained:
            return ChainCheck(
                False,
                0,
                now,
                None,
                unchained[0],
                "an entry outside the chain (written with the chain trigger disabled)",
            )
        last_seq, last_digest, count = 0, "", 0
        while True:
            cursor.execute(_ROWS, [last_seq, chunk])
            rows = cursor.fetchall()
            if not rows:
                return ChainCheck(True, count, now)
            for seq, pk, prev_digest, digest, expected in rows:
                problem = ""
                if seq != last_seq + 1:
                    problem = f"entries #{last_seq + 1}–#{seq - 1} are missing (deleted)"
                elif prev_digest != last_digest:
                    problem = f"it does not follow entry #{last_seq} (its link was rewritten)"
                elif digest != expected:
                    problem = "its content was changed after it was written"
                if problem:
                    return ChainCheck(False, count, now, seq, pk, problem)
                last_seq, last_digest, count = seq, digest, count + 1
