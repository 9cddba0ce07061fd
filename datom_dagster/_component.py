"""``DatomComponent``: a datom project in a ``dg`` project, configured in YAML.

What it records and how to use it is in the docstring of :class:`DatomComponent`.
"""

from typing import Annotated, Literal

from pydantic import Field

import dagster as dg
import datom_core as dc
from dagster import DefaultSensorStatus, EnvVar
from datom_dagster._annotations import validate_datom_definitions
from datom_dagster._checks import build_datom_asset_checks
from datom_dagster._config import DatomResource
from datom_dagster._inbox import datom_inbox_assets, datom_inbox_sensor
from datom_dagster._io_manager import DatomIOManager
from datom_dagster._storage import DefaultStorage, LocalStorage, S3Storage, Storage, UrlStorage

__all__ = ["DatomComponent", "DatomComponentScaffolder"]


class StoreModel(dg.Model):
    """Where the parquet bytes live (one kind; credentials by environment variable name)."""

    kind: Literal["local", "s3", "url"] = Field(
        description="Which store: 'local' (a directory, `path`), 's3' (`bucket`, `prefix`, ...) "
        "or 'url' (any fsspec URL, `url`)."
    )
    path: str | None = Field(default=None, description="kind local: the store's directory.")
    url: str | None = Field(
        default=None, description="kind url: the store's fsspec URL (e.g. gs://bucket/prefix)."
    )
    bucket: str | None = Field(default=None, description="kind s3: the bucket.")
    prefix: str | None = Field(default=None, description="kind s3: the key prefix in the bucket.")
    endpoint_url: str | None = Field(
        default=None, description="kind s3: an S3-compatible endpoint (MinIO, Ceph...)."
    )
    region: str | None = Field(default=None, description="kind s3: the bucket's region.")
    aws_access_key_id_env: str | None = Field(
        default=None,
        description="kind s3: the NAME of the environment variable holding the access key id "
        "(never the value; omitted: the usual AWS chain).",
    )
    aws_secret_access_key_env: str | None = Field(
        default=None,
        description="kind s3: the NAME of the environment variable holding the secret key.",
    )
    aws_session_token_env: str | None = Field(
        default=None,
        description="kind s3: the NAME of the environment variable holding a session token.",
    )

    def storage(self) -> Storage:
        """The typed storage choice this describes."""
        if self.kind == "local":
            return LocalStorage(path=_required(self.path, "path", "local"))
        if self.kind == "url":
            return UrlStorage(url=_required(self.url, "url", "url"))
        return S3Storage(
            bucket=_required(self.bucket, "bucket", "s3"),
            prefix=self.prefix,
            endpoint_url=self.endpoint_url,
            region=self.region,
            aws_access_key_id=_env(self.aws_access_key_id_env),
            aws_secret_access_key=_env(self.aws_secret_access_key_env),
            aws_session_token=_env(self.aws_session_token_env),
        )


class InboxModel(dg.Model):
    """The raw tables onboarded from file drops, and the sensor that watches for them."""

    tables: list[str] = Field(
        description="The raw tables, named after their files' stems (dm.csv -> dm); one asset each."
    )
    path: str | None = Field(
        default=None,
        description="The folder or URL files arrive in (default: the clone's input_files/).",
    )
    sensor: Literal["running", "stopped", "none"] = Field(
        default="stopped",
        description="The inbox sensor: 'stopped' (the default, as Dagster's: start it in the "
        "UI, Automation), 'running' (starts with the daemon) or 'none' (no sensor: "
        "materialize the raw assets yourself).",
    )
    minimum_interval_seconds: int = Field(
        default=30, description="Seconds between two scans of the inbox by the sensor."
    )
    group_name: str = Field(default="raw", description="The asset group of the raw tables.")
    sensor_name: str | None = Field(
        default=None, description="The sensor's name (default <project>_inbox_sensor)."
    )
    op_name: str | None = Field(
        default=None, description="The onboarding op's name (default onboard_<project>)."
    )
    encoding: str | None = Field(
        default=None,
        description=(
            "Encoding of the files' text, e.g. cp1252 (csv and SAS/SPSS/Stata; default: "
            "UTF-8 for csv, the declared one for SAS/SPSS/Stata, falling back to "
            "Windows-1252 with a logged note when their text is not valid in it)."
        ),
    )


class ChecksModel(dg.Model):
    """Checks on chosen assets: integrity and lineage always; change checks on request."""

    assets: list[str] = Field(
        description="The assets to check (their keys, e.g. adsl): the stored bytes against "
        "parquet_sha, and the recorded lineage against the parents."
    )
    schema_change: bool = Field(
        default=False,
        description="Also add a check failing when the latest version added or removed columns.",
    )
    row_count_change: float | None = Field(
        default=None,
        description="Also add a check failing when the row count moved by more than this "
        "fraction (0.2 = 20%).",
    )
    blocking: bool = Field(
        default=False,
        description="Whether the two change checks block downstream assets when they fail.",
    )


class DatomComponentScaffolder(dg.Scaffolder):
    """``dg scaffold defs datom_dagster.DatomComponent <name>``: a working local project."""

    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        """Write ``defs.yaml`` for a zero-configuration project named after the folder."""
        name = _identifier(request.target_path.name).upper() or "STUDY"
        dg.scaffold_component(
            request,
            {
                "project": name,
                "inbox": {"tables": ["dm"], "sensor": "stopped"},
                "checks": {"assets": ["dm"], "schema_change": True},
            },
        )


@dg.scaffold_with(DatomComponentScaffolder)
class DatomComponent(dg.Component, dg.Model, dg.Resolvable):
    """A datom project: resource, IO manager, inbox assets and sensor, and checks.

    ``dg scaffold defs datom_dagster.DatomComponent my_study`` writes ``defs/my_study/defs.yaml``;
    a complete one reads::

        type: datom_dagster.DatomComponent
        attributes:
          project: STUDY_001
          store:                      # omitted: the zero-configuration local project
            kind: s3                  # local (path), s3 (bucket, prefix...) or url (url)
            bucket: my-bucket
            prefix: studies/s001
            aws_access_key_id_env: AWS_ACCESS_KEY_ID          # names of variables, never values
            aws_secret_access_key_env: AWS_SECRET_ACCESS_KEY
          remote: https://github.com/team/s001-metadata.git   # token: $DATOM_GIT_TOKEN
          inbox:
            tables: [dm, ex, lb, ae]
            sensor: running           # running, stopped or none
          checks:
            assets: [adsl, adae]
            schema_change: true
            row_count_change: 0.2
            blocking: false

    It defines the ``datom`` resource (:class:`~datom_dagster.DatomResource`), the
    ``io_manager`` (:class:`~datom_dagster.DatomIOManager` on that project), the inbox
    assets and sensor, and the checks; the keys are configurable. Its definitions are checked
    with :func:`~datom_dagster.validate_datom_definitions` when they load.
    """

    project: str = Field(
        description="The datom project name (recorded in every version; e.g. STUDY_001)."
    )
    # Fields with a default carry their description on the resolver: Dagster rebuilds the
    # component's model with a Field(default=...) of its own, which drops a pydantic one.
    home: Annotated[
        str | None,
        dg.Resolver.default(
            description="The datom home holding zero-configuration projects (default $DATOM_HOME, "
            "else ~/.datom)."
        ),
    ] = None
    clone_path: Annotated[
        str | None,
        dg.Resolver.default(
            description="Where this process keeps its git clone of the project (default: "
            "<home>/<project>, cloned from `remote` on first use)."
        ),
    ] = None
    store: Annotated[
        StoreModel | None,
        dg.Resolver.default(
            description="Where the parquet bytes live (omitted: a local store in the datom home)."
        ),
    ] = None
    remote: Annotated[
        str | None,
        dg.Resolver.default(
            description="The git remote of the metadata: a path or an HTTPS URL (token from "
            "$DATOM_GIT_TOKEN; omitted: an embedded bare repository in the datom home)."
        ),
    ] = None
    ephemeral: Annotated[
        bool,
        dg.Resolver.default(
            description="Workers start with an empty home (a container per step): the "
            "clone of an HTTPS remote fetches the tip commit only (a shallow clone)."
        ),
    ] = False
    inbox: Annotated[
        InboxModel | None,
        dg.Resolver.default(description="File drops to onboard as raw tables, and their sensor."),
    ] = None
    checks: Annotated[
        ChecksModel | None,
        dg.Resolver.default(description="Integrity, lineage and change checks for chosen assets."),
    ] = None
    resource_key: Annotated[
        str,
        dg.Resolver.default(description="The resource key of the project's DatomResource."),
    ] = "datom"
    io_manager_key: Annotated[
        str,
        dg.Resolver.default(
            description="The resource key of the DatomIOManager (io_manager: every asset's default)."
        ),
    ] = "io_manager"

    def resource(self) -> DatomResource:
        """The project as a resource."""
        storage: Storage = self.store.storage() if self.store else DefaultStorage()
        return DatomResource(
            project_name=self.project,
            home=self.home,
            clone_path=self.clone_path,
            storage=storage,
            remote=self.remote,
            ephemeral=self.ephemeral,
        )

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        """The component's definitions, checked as they load."""
        datom = self.resource()
        assets: list[dg.AssetsDefinition] = []
        sensors: list[dg.SensorDefinition] = []
        if self.inbox is not None:
            raw = datom_inbox_assets(
                self.inbox.tables,
                resource_key=self.resource_key,
                inbox=self.inbox.path,
                group_name=self.inbox.group_name,
                name=self.inbox.op_name or f"onboard_{_identifier(self.project)}",
                encoding=self.inbox.encoding,
            )
            assets.append(raw)
            if self.inbox.sensor != "none":
                status = (
                    DefaultSensorStatus.RUNNING
                    if self.inbox.sensor == "running"
                    else DefaultSensorStatus.STOPPED
                )
                sensors.append(
                    datom_inbox_sensor(
                        raw,
                        resource_key=self.resource_key,
                        inbox=self.inbox.path,
                        name=self.inbox.sensor_name or f"{_identifier(self.project)}_inbox_sensor",
                        minimum_interval_seconds=self.inbox.minimum_interval_seconds,
                        default_status=status,
                    )
                )
        checks = []
        if self.checks is not None:
            checks = build_datom_asset_checks(
                self.checks.assets,
                io_manager_key=self.io_manager_key,
                schema_change=self.checks.schema_change,
                row_count_change=self.checks.row_count_change,
                change_checks_blocking=self.checks.blocking,
            )
        defs = dg.Definitions(
            assets=assets,
            asset_checks=checks,
            sensors=sensors,
            resources={
                self.resource_key: datom,
                self.io_manager_key: DatomIOManager(datom=datom),
            },
        )
        return validate_datom_definitions(defs)


def _identifier(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")


def _required(value: str | None, field: str, kind: str) -> str:
    if not value:
        raise dc.StoreError(f"DatomComponent: a store of kind {kind!r} needs {field!r}")
    return value


def _env(name: str | None) -> str | None:
    return EnvVar(name) if name else None
