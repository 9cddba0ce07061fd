"""DatomComponent through the real ``dg`` CLI: listed, scaffolded, checked, materialized.

The CLI runs in a subprocess on a temporary dg project. This checkout is not installed,
so the entry point of pyproject's ``[project.entry-points]`` table is made visible the
way an installed distribution would be: a ``.dist-info`` folder on ``PYTHONPATH``.
"""

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
import yaml

import datom_core as dc
from dagster import AssetCheckKey, AssetKey, DagsterInstance, component_defs
from datom_dagster import DatomComponent, DatomResource

REPO_ROOT = Path(__file__).resolve().parents[2]
DG = str(Path(sys.executable).parent / "dg")
GROUP = "dagster_dg_cli.registry_modules"

DEFINITIONS = """\
from pathlib import Path

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
"""


def _entry_points(folder: Path) -> Path:
    """A dist-info folder declaring this checkout's entry points (from pyproject)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    table = project["entry-points"][GROUP]
    info = folder / "datom_checkout-0.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: datom-checkout\nVersion: 0.0.0\n")
    lines = [f"[{GROUP}]", *(f"{k} = {v}" for k, v in table.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture
def dg_project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An empty dg project and the environment to run ``dg`` in it."""
    root = tmp_path / "proj"
    (root / "study_proj" / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "study-proj"\nversion = "0.1.0"\n\n'
        '[tool.dg]\ndirectory_type = "project"\n\n'
        '[tool.dg.project]\nroot_module = "study_proj"\n'
    )
    (root / "study_proj" / "__init__.py").write_text("")
    (root / "study_proj" / "defs" / "__init__.py").write_text("")
    (root / "study_proj" / "definitions.py").write_text(DEFINITIONS)
    (tmp_path / "dagster_home").mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(_entry_points(tmp_path / "ep")), str(REPO_ROOT), str(root)]
        ),
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "DATOM_HOME": str(tmp_path / "datom"),
    }
    return root, env


def _dg(root: Path, env: dict[str, str], *args: str, ok: bool = True) -> str:
    done = subprocess.run(
        [DG, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    output = done.stdout + done.stderr
    assert (done.returncode == 0) == ok, f"dg {' '.join(args)} -> {done.returncode}:\n{output}"
    return output


def test_dg_lists_scaffolds_checks_and_materializes_the_component(dg_project):
    root, env = dg_project
    out = _dg(root, env, "list", "components", "--json")
    [listing] = [line for line in out.splitlines() if line.startswith('{"items"')]
    listed = json.loads(listing)
    assert "datom_dagster.DatomComponent" in {item["key"] for item in listed["items"]}

    _dg(root, env, "scaffold", "defs", "datom_dagster.DatomComponent", "my_study")
    yaml_text = (root / "study_proj" / "defs" / "my_study" / "defs.yaml").read_text()
    assert "type: datom_dagster.DatomComponent" in yaml_text and "MY_STUDY" in yaml_text
    assert "All definitions loaded successfully" in _dg(root, env, "check", "defs")

    # A file dropped into the scaffolded project's inbox is onboarded by a launched run.
    clone = Path(env["DATOM_HOME"]) / "MY_STUDY" / "repo"
    DatomResource(project_name="MY_STUDY", home=env["DATOM_HOME"]).connection()
    pd.DataFrame({"USUBJID": ["s1", "s2"]}).to_csv(clone / "input_files" / "dm.csv", index=False)
    _dg(root, env, "launch", "--assets", "*")
    assert dc.connect(clone).read("dm")["USUBJID"].tolist() == ["s1", "s2"]
    with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        event = instance.get_latest_materialization_event(AssetKey("dm"))
        assert event is not None
        shown = event.asset_materialization.metadata
        assert shown["datom/version"].value == dc.connect(clone).resolve("dm")
        checks = instance.event_log_storage.get_asset_check_execution_history
        for name in ("datom_integrity", "datom_schema_change"):
            [execution] = checks(AssetCheckKey(AssetKey("dm"), name), limit=1)
            assert execution.status.value == "SUCCEEDED", name


def test_yaml_with_a_local_store_loads_and_a_bad_option_fails_the_check(dg_project, tmp_path):
    root, env = dg_project
    folder = root / "study_proj" / "defs" / "study"
    folder.mkdir()
    (folder / "defs.yaml").write_text(
        "type: datom_dagster.DatomComponent\n"
        "attributes:\n"
        "  project: S001\n"
        f"  clone_path: {tmp_path / 'clone'}\n"
        "  store:\n"
        "    kind: local\n"
        f"    path: {tmp_path / 'store'}\n"
        "  inbox:\n"
        "    tables: [dm, ae]\n"
        "  checks:\n"
        "    assets: [dm, ae]\n"
        "    row_count_change: 0.25\n"
        "    blocking: true\n"
    )
    assert "All definitions loaded successfully" in _dg(root, env, "check", "defs")
    (folder / "defs.yaml").write_text(
        "type: datom_dagster.DatomComponent\n"
        "attributes:\n"
        "  project: S001\n"
        "  store:\n"
        "    kind: local\n"
        "  inbox:\n"
        "    tables: [dm]\n"
        "    sensr: running\n"
    )
    out = _dg(root, env, "check", "defs", ok=False)
    assert "sensr" in out


# Dagster 1.13 reads component YAML through pydantic's deprecated parse_obj_as (its own use).
@pytest.mark.filterwarnings("ignore:`parse_obj_as` is deprecated")
def test_component_from_yaml_with_an_s3_store_materializes_without_leaking_secrets(
    fresh_instance, tmp_path, s3_endpoint, s3_bucket, monkeypatch
):
    monkeypatch.setenv("STUDY_KEY_ID", "AKIDCOMPONENT0000001")
    monkeypatch.setenv("STUDY_SECRET", "component-secret-never-shown-0001")
    attributes = yaml.safe_load(
        "project: S3STUDY\n"
        f"clone_path: {tmp_path / 'clone'}\n"
        "store:\n"
        "  kind: s3\n"
        f"  bucket: {s3_bucket}\n"
        "  prefix: team\n"
        f"  endpoint_url: {s3_endpoint}\n"
        "  aws_access_key_id_env: STUDY_KEY_ID\n"
        "  aws_secret_access_key_env: STUDY_SECRET\n"
        "inbox:\n"
        "  tables: [dm]\n"
        "checks:\n"
        "  assets: [dm]\n"
        "  schema_change: true\n"
    )
    component = DatomComponent.resolve_from_dict(attributes)
    defs = component_defs(component=component)
    conn = defs.resources["datom"].connection()
    pd.DataFrame({"USUBJID": ["s1"]}).to_csv(conn.path / "input_files" / "dm.csv", index=False)
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=fresh_instance)
    assert result.success
    reader = dc.connect(
        store=dc.S3Store(s3_bucket, "team", endpoint_url=s3_endpoint), project_name="S3STUDY"
    )
    assert reader.read("dm")["USUBJID"].tolist() == ["s1"]
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"datom_integrity": True, "datom_schema_change": True}
    run = fresh_instance.get_run_by_id(result.run_id)
    logs = [repr(e) for e in fresh_instance.all_logs(result.run_id)]
    for text in [repr(run), repr(defs.resources["datom"]), *logs]:
        assert "component-secret-never-shown-0001" not in text


def test_the_inbox_sensor_of_a_component_is_stopped_unless_asked() -> None:
    """Dagster's default for a sensor: stopped until someone starts it (the component's
    default was 'running')."""
    from datom_dagster._component import InboxModel

    assert InboxModel(tables=["dm"]).sensor == "stopped"
