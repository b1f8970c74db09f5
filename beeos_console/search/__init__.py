"""The header search box: ids by any fragment, pasted console / BeeOS URLs, full text (#14)."""
