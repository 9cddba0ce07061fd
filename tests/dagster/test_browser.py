"""A reviewer's view: the demo's asset page in a real browser explains the version.

Runs ``make demo``'s story into a temporary folder, starts ``dagster-webserver`` on
loopback over the demo's instance (``workspace.yaml``, as the demo tells users to), opens
``adsl``'s events page in headless Chromium (Debian's ``chromium``, driven by Playwright)
and checks that the version, its data_sha, the parents table and the change summary are
on the page, led by the summary line (``unchanged — still v4 (written ...)``: the demo's
last run changed nothing). The screenshot stays in the test's tmp dir (``adsl.png``).
"""

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import datom_core as dc

from .conftest import dagster_process

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.timeout(600)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_served(url: str, log: Path) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
    deadline = time.monotonic() + 120
    while True:
        try:
            with opener.open(url, timeout=5):
                return
        except OSError:
            assert time.monotonic() < deadline, f"webserver never answered:\n{log.read_text()}"
            time.sleep(0.5)


def _dismiss_dialogs(page: Any) -> None:
    """Close what a fresh instance opens over the page (the community sign-up dialog, or
    any other overlay): its Skip button, else Escape."""
    for _ in range(5):
        skip = page.get_by_role("button", name="Skip")
        if skip.count():
            skip.first.click()
        elif page.locator(".bp5-overlay-backdrop").count():
            page.keyboard.press("Escape")
        else:
            return
        page.wait_for_timeout(300)


def test_the_asset_page_explains_the_version(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    demo = tmp_path / "demo"
    env = {**os.environ, "DATOM_DEMO_DIR": str(demo), "DAGSTER_DISABLE_TELEMETRY": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "example_project.demo"],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    conn = dc.connect(demo / "datom" / "STUDY_001" / "repo")
    version, recorded = conn.resolve("adsl"), conn.metadata("adsl")

    port = _free_port()
    server_env = {
        **env,
        "DAGSTER_HOME": str(demo / "dagster"),
        "DATOM_HOME": str(demo / "datom"),
        "NO_PROXY": "127.0.0.1",
    }
    command = [
        str(Path(sys.executable).parent / "dagster-webserver"),
        *("-h", "127.0.0.1", "-p", str(port), "-w", str(REPO_ROOT / "workspace.yaml")),
    ]
    log = tmp_path / "webserver.log"
    base = f"http://127.0.0.1:{port}"
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install chromium"
    with dagster_process(command, server_env, log):
        _wait_until_served(f"{base}/server_info", log)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 2200})
                page.goto(f"{base}/assets/adsl?view=events", timeout=120_000)
                page.get_by_text("datom/parents").first.wait_for(timeout=120_000)
                _dismiss_dialogs(page)
                page.get_by_text(version).first.wait_for(timeout=60_000)
                page.screenshot(path=str(tmp_path / "adsl.png"), full_page=True)
                if os.environ.get("DATOM_SCREENSHOT_DIR"):  # kept for a look by eye
                    page.screenshot(
                        path=str(Path(os.environ["DATOM_SCREENSHOT_DIR"]) / "adsl.png"),
                        full_page=True,
                    )
                text = page.inner_text("body")
                # The event before: month 4's derivation, summarised by key.
                stamps = page.get_by_text(re.compile(r"^\w{3} \d+, \d+:\d\d [AP]M$"))
                _dismiss_dialogs(page)  # a dialog may open late, over the page
                stamps.nth(1).click()
                page.get_by_text("v4 of 4, was v3").first.wait_for(timeout=60_000)
                page.screenshot(path=str(tmp_path / "adsl_v4.png"), full_page=True)
                if os.environ.get("DATOM_SCREENSHOT_DIR"):
                    page.screenshot(
                        path=str(Path(os.environ["DATOM_SCREENSHOT_DIR"]) / "adsl_v4.png"),
                        full_page=True,
                    )
                changed = page.inner_text("body")
            finally:
                browser.close()

    assert (tmp_path / "adsl.png").stat().st_size > 10_000
    assert version in text and recorded["data_sha"] in text
    for parent in recorded["parents"]:  # the parents table: one row per parent
        row = "\t".join(
            [parent["table"], parent["version"][:12], parent["data_sha"][:12], parent["source"]]
        )
        assert row in text, f"parent row {row!r} not on the page"
    written = conn.history("adsl")[0].timestamp
    assert f"unchanged — still v4 (written {written})" in text  # datom/summary
    assert "datom/summary" in text and text.index("datom/summary") < text.index("datom/version")
    assert f"adsl: unchanged — still v4 (written {written})" in text  # datom/changes
    assert "datom/source_lineage" in text and "data_sha" in text
    assert "datom/parent/dm" in text and "datom/parent/ex" in text  # links to the upstreams
    # Month 4 against month 3, by adsl's key: the line and the report agree.
    v4 = conn.history("adsl")
    assert "v4 of 4, was v3 — full: " in changed and "rows changed" in changed
    assert f"| version | {v4[1].version[:12]}" not in changed  # rendered as a table, not text
    assert "rows by key (USUBJID)" in changed
