"""The full-text search expressions of mirrored text columns (the header search box).

The GIN indexes of ``tasks`` and ``operations`` are built on ``search_vector(column)``
and the search queries use the same call: PostgreSQL uses an expression index
only when the query's expression is the same, here
``to_tsvector('simple'::regconfig, COALESCE(column, ''))``. ``simple``: no
stemming and no stop words — ids, codes and customer wording in any language
are matched as typed (lower-cased).
"""

from __future__ import annotations

from django.contrib.postgres.search import SearchQuery, SearchVector

SEARCH_CONFIG = "simple"


def search_vector(column: str) -> SearchVector:
    return SearchVector(column, config=SEARCH_CONFIG)


def search_query(text: str) -> SearchQuery:
    """Web-search syntax: words (all required), "quoted phrases", ``or``, ``-word``."""
    return SearchQuery(text, config=SEARCH_CONFIG, search_type="websearch")
