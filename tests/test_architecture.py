"""The package boundaries the design promises, checked on the source itself.

Each rule is checked per module, so a failure names the file that breaks it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1]
MAX_LINES = 400
PACKAGES = ("datom_core", "datom_dagster")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _modules(package: str) -> list[Path]:
    return sorted((SRC / package).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


_ALL = {_module_name(p): p for package in PACKAGES for p in _modules(package)}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Module-level imports that run at import time (``if TYPE_CHECKING:`` blocks excluded)."""
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            stack += node.body + node.orelse
        elif isinstance(node, ast.Try):
            stack += node.body + node.orelse + node.finalbody
            for handler in node.handlers:
                stack += handler.body


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    is_package = _ALL[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The project modules an import statement loads."""
    if isinstance(node, ast.Import):
        found = {alias.name for alias in node.names}
    else:
        target = _absolute(module, node)
        found = {target}
        found |= {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in _ALL}
    loaded = set()
    for name in found:
        parts = name.split(".")
        # Importing a.b.c runs a and a.b first; the packages enclosing the importer
        # itself are already initialising and add no edge.
        for i in range(1, len(parts) + 1):
            candidate = ".".join(parts[:i])
            if candidate in _ALL and not (module + ".").startswith(candidate + "."):
                loaded.add(candidate)
    loaded.discard(module)
    return loaded


def _graph() -> dict[str, set[str]]:
    graph = {}
    for module, path in _ALL.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[module] = set().union(*(_targets(module, n) for n in _runtime_imports(tree)))
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_reads_real_edges() -> None:
    graph = _graph()
    assert "datom_core._project._context" in graph["datom_core._connection"]
    assert "datom_core._errors" in graph["datom_core._project._context"]


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_core_never_imports_dagster() -> None:
    offenders = [p for p in _modules("datom_core") if "dagster" in _imports(p)]
    assert offenders == []
    code = "import sys, datom_core, datom_core.cli; print(any(m.startswith('dagster') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_only_the_git_layer_imports_dulwich() -> None:
    users = {
        p.relative_to(SRC / "datom_core")
        for p in _modules("datom_core")
        if "dulwich" in _imports(p)
    }
    assert users and all(path.parts[0] == "_git" for path in users), users


def test_only_the_arrow_boundary_knows_pandas_and_polars() -> None:
    users = {p.name for p in _modules("datom_core") if _imports(p) & {"pandas", "polars"}}
    assert users == {"_arrow.py"}


def _rel(path: Path) -> str:
    return str(path.relative_to(SRC))


_SOURCES = [p for package in (*PACKAGES, "example_project") for p in _modules(package)]


@pytest.mark.parametrize("path", _SOURCES, ids=_rel)
def test_modules_stay_small(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_LINES


# The git layer outside its fenced accelerators (datom_core/_git/_fast/): issue 30 asks
# for under 3,000 lines. This is the layer's size as it stands (4,582 when object storage
# went back to dulwich; since then reused ref advertisements, shallow clones, group
# commit and the SHA-256 and kept-pack rules were added): lowered as code goes back to
# dulwich, and raised only with new behaviour, never for speed.
GIT_LAYER_MAX = 5411  # -7: a lock in a clone's or a local remote's way refused by one message (_gitlocks), the age of a lock file beside the lock handling, not in the branch reader (_remoterefs); +1: review: the local remote's turn named in the tenure's docstring (_lock, _gitlocks); +12: a writer losing race after race compacts its clone between tries (each look fetched a pack: 670 beside a push loop; _maintenance, _repo); +14: a rebase or a bisect git has in progress in a clone named with git's own remedy, not "check out the branch" (_internals); +28: a clone whose HEAD git detached (a checkout of a commit, git submodule update, a CI job's checkout) refused naming the commit and the branch to check out, and a clone named by its folder, not a submodule's core.worktree path (_internals, _objects); +3: a killed writer's tenure noted before each of its git locks, and only the locks made as its last one began swept (a git commit made since keeps its lock; _lock, _gitlocks); -10: a local remote's ref locks never removed unless a datom pusher killed under its writers' turn left them (the turn keeps a tenure, as the clone's lock does; _transport, _gitlocks), an object's lock handled where objects are written (_copy, _remoterefs); -5: safe.directory read through user_config (the one reader of the user's files, _ownership), the clone lock's sweep a partial (_repo); +4: an interrupt in the sweep of a killed writer's git locks lets the clone lock go (_lock); +28: a clone's credential helper and a local remote's hooks run in the repository datom names, not one GIT_DIR, GIT_INDEX_FILE or GIT_OBJECT_DIRECTORY of the caller's environment names (git's local_repo_env; the command's settings cleared for the remote, _types, _receive, _credentials); +128: git's lock files in a clone never removed unless a datom writer killed holding the clone's lock left them (the lock's tenure, written in place before a hold's first git lock: 0.7 us a take, 3.8 us with it; swept by the next holder), a git process's waited for, one that stays named (_gitlocks, _lock, _internals, _repo, _fast/_index); +113: a repository another user owns refused as git refuses it (safe.directory, SUDO_UID; a local remote without the command's settings), before anything of its configuration runs (_ownership, _settings); -5: git's environment's settings read in one place for the configuration and its stamp (_types, _settings), a busy server's words beside the other remote errors (_remoteerrors); +16: the user's configuration paths found once per value of what decides them (config_stamp: 38 -> 26 us; _types); +33: git's environment's settings (GIT_CONFIG_COUNT, KEY_n, VALUE_n) above every file, watched as the files are (_types, _settings); +13: the author git would record from its environment (GIT_AUTHOR_NAME/EMAIL, author.*, EMAIL; _types); +4: a helper's token that expires asked for again at the 401 (_httpclient); +7: an SSH signature's temporary file that cannot be written refused as datom's error (_signing); +42: a client certificate presented where git presents one (http.sslCert/sslKey, GIT_SSL_CERT/KEY; mutual TLS), a failed handshake and an unreadable certificate named (_httpsettings, _httpclient, _remoteerrors); +125: commits signed as git signs them where commit.gpgSign asks (OpenPGP by gpg, SSH by ssh-keygen; _signing, _objects, _repo, _metadata), and the user's configuration watched for changes as the clone's is (_settings, _types); +30: a remote out of reach (a host name not known, nothing answering, no answer to a connection) named at once, after urllib3's three quick tries, not after the 30 s a fetch racing pushes is given (_httpclient, _httpsettings, _remoteerrors); -1: the user's configuration read as git reads it for the clone (includeIf gitdir:/onbranch:, _types); -14: Retry-After read in one place outside the layer, shared with the S3 store (datom_core/_retryafter); +31: a push a server's front refuses for its size (413) or its chunks (411) named with the setting to change; the remote's failures as GitError a module of their own (_remoteerrors, split from _http); +97: a server that says "later" (429, 503; a gateway's 502 or 504 to a request that changes nothing) asked again when it says, one policy instead of urllib3's unbounded one for GETs, what it said named (_httpclient, _http, _httpsettings); +177: the credentials git would send, asked of its credential helpers on a 401, and its url.<base>.insteadOf rules (_credentials, _httpclient, _http); +7: a proxy git takes without a scheme (_httpsettings); +5: a linked worktree's shared refs and configuration read and written in the common git folder (_internals, _settings, _types); +24: a clone git made with an ssh origin refused naming its https address (_remote, _http); +141: how an HTTPS remote is reached by git's rules, its TLS environment and proxies (_httpsettings), an untrusted certificate named at once (_httpclient, _http); +90: a sparse checkout kept to, a sparse or damaged index refused before anything changes, config.worktree read (_settings, _worktree, _internals, _types); +19: a local remote's hooks found through core.hooksPath, as receive-pack finds them, read once per change of its configuration (_receive); +117: git's maintenance beside datom (a pack list it cannot break, fetched packs kept till a ref reaches them: _read, _internals; a push the server failed to store sent again: _http); +20: packs a clone gains from a local remote, after its push or in a commit kept the same way (_copy, _metadata); +20: local work named only where no tip reaches it whatever the commit dates (_localwork)
GIT_LAYER_TARGET = 3000


def _git_layer_lines() -> int:
    return sum(len(p.read_text().splitlines()) for p in (SRC / "datom_core" / "_git").glob("*.py"))


def test_the_git_layer_outside_its_accelerators_stays_within_its_ceiling() -> None:
    lines = _git_layer_lines()
    assert lines <= GIT_LAYER_MAX, (
        f"datom_core/_git/ holds {lines} lines outside _fast/ (ceiling {GIT_LAYER_MAX}, "
        f"target {GIT_LAYER_TARGET}): hand work back to dulwich, or fence an accelerator"
    )


def test_the_accelerators_are_fenced_and_documented() -> None:
    """Every module of ``_git/_fast/`` says what it accelerates, its contract, its plain
    path and the switch."""
    fast = sorted((SRC / "datom_core" / "_git" / "_fast").glob("_*.py"))
    assert {p.name for p in fast} >= {"_index.py", "_tree.py", "_packs.py", "_history.py"}
    for path in fast:
        if path.name == "__init__.py":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        assert "accelerator" in doc and "DATOM_PLAIN=1" in doc, path
        assert "Contract" in doc and "Plain path" in doc, path


def _function_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom):
                    name = "." * sub.level + (sub.module or "")
                elif isinstance(sub, ast.Import):
                    name = sub.names[0].name
                else:
                    continue
                if name.startswith(".") or name.split(".")[0] in PACKAGES:
                    found.append(f"line {sub.lineno}: {name}")
    return found


@pytest.mark.parametrize("path", [p for pk in PACKAGES for p in _modules(pk)], ids=_rel)
def test_no_function_level_project_imports(path: Path) -> None:
    assert _function_imports(path) == []


def _init_statements_that_are_not_reexports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if all(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                continue
        bad.append(f"line {node.lineno}: {type(node).__name__}")
    return bad


_INITS = [p for pk in PACKAGES for p in _modules(pk) if p.name == "__init__.py"]


@pytest.mark.parametrize("path", _INITS, ids=_rel)
def test_init_files_only_reexport(path: Path) -> None:
    assert _init_statements_that_are_not_reexports(path) == []


def _private_project_imports(path: Path, allowed_prefix: str) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if not name.startswith("datom_core.") or name.startswith(allowed_prefix):
                continue
            if any(part.startswith("_") for part in name.split(".")[1:]):
                bad.append(f"line {node.lineno}: {name}")
    return bad


@pytest.mark.parametrize("path", _modules("datom_core/cli"), ids=_rel)
def test_the_cli_uses_the_public_api_only(path: Path) -> None:
    assert _private_project_imports(path, "datom_core.cli.") == []


@pytest.mark.parametrize("path", _modules("datom_dagster"), ids=_rel)
def test_the_plugin_uses_the_public_api_only(path: Path) -> None:
    assert _private_project_imports(path, "datom_core.cli.") == []


def test_the_private_import_rule_can_fail(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from datom_core._project._read import read_table\nimport datom_core\n")
    assert _private_project_imports(probe, "datom_core.cli.") == [
        "line 1: datom_core._project._read",
        "line 1: datom_core._project._read.read_table",
    ]


def _generated_doc(cls: type) -> bool:
    # A dataclass without a docstring gets "Name(field: type, ...)" written for it.
    doc = cls.__dict__.get("__doc__") or ""
    return not doc.strip() or doc.startswith(f"{cls.__name__}(")


@pytest.mark.parametrize("package", PACKAGES)
def test_public_api_is_explicit_and_documented(package: str) -> None:
    module = __import__(package)
    assert module.__all__, f"{package} must declare __all__"
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, type):
            assert not _generated_doc(obj), f"{package}.{name} has no hand-written docstring"
        elif callable(obj):
            assert obj.__doc__, f"{package}.{name} has no docstring"
