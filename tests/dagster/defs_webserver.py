"""A small code location for the webserver test (loaded by ``dagster-webserver -m``)."""

import pandas as pd

from dagster import Definitions, asset
from datom_dagster import DatomIOManager


@asset
def source() -> pd.DataFrame:
    return pd.DataFrame({"id": [1, 2, 3], "name": ["a", "b", None]})


@asset
def derived(source: pd.DataFrame) -> pd.DataFrame:
    return source.assign(double=source["id"] * 2)


ASSETS = [source, derived]

# Never used by the webserver (it runs nothing); the test materialises with its own.
defs = Definitions(assets=ASSETS, resources={"io_manager": DatomIOManager()})
