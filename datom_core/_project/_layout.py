"""Where each document lives: paths in the git clone and keys in the store (STORE.md)."""

from __future__ import annotations

PROJECT_YAML = ".datom/project.yaml"
MANIFEST = ".datom/manifest.json"
STORE_MANIFEST = ".metadata/manifest.json"
INBOX = "input_files"
SET_PAYLOAD = "set.json"
"""The file that makes a folder of a product repo a set, not a table (SETS.md)."""

GITIGNORE = """\
# datom: data never goes to git; the inbox is local.
input_files/
*.parquet
*.csv
*.tsv
*.txt
*.psv
*.sas7bdat
*.xpt
*.sav
*.zsav
*.por
*.dta
*.xls
*.xlsx
*.rds
"""


def git_metadata(table: str) -> str:
    return f"{table}/metadata.json"


def git_history(table: str) -> str:
    return f"{table}/version_history.json"


def store_metadata(table: str) -> str:
    return f"{table}/.metadata/metadata.json"


def store_history(table: str) -> str:
    return f"{table}/.metadata/version_history.json"


def store_snapshot(table: str, version: str) -> str:
    return f"{table}/.metadata/{version}.json"


def store_parquet(table: str, data_sha: str) -> str:
    return f"{table}/{data_sha}.parquet"
