"""A labelled table's column labels are the descriptions of Dagster's column schema."""

import pyarrow as pa

from dagster import asset, materialize

from .conftest import latest, meta

_LABELS = {
    "label": "Sex of subject",
    "format.spss": "F8.2",
    "labels": '[[1.0, "Male"], [2.0, "Female"]]',
}


@asset
def labelled() -> pa.Table:
    schema = pa.schema(
        [pa.field("USUBJID", pa.string()), pa.field("SEX", pa.float64(), metadata=_LABELS)]
    )
    return pa.table({"USUBJID": ["s1", "s2"], "SEX": [1.0, 2.0]}, schema=schema)


def test_labels_are_column_descriptions(instance, io_manager):
    assert materialize([labelled], instance=instance, resources={"io_manager": io_manager}).success
    schema = meta(latest(instance, "labelled"), "dagster/column_schema")
    described = {c.name: c.description for c in schema.columns}
    assert described == {
        "USUBJID": None,
        "SEX": "Sex of subject [format F8.2; 1 = Male, 2 = Female]",
    }
