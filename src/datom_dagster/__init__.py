"""datom_dagster: every Dagster asset output becomes a datom version."""
