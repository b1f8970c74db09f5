"""Building blocks that know no domain model."""
