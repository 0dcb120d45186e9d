"""The shell and Python snippets of README.md and docs/*.md, as tests see them.

A fenced block tagged ``bash``, ``sh``, ``console`` or ``python`` runs in a test, from a scratch
folder that links the repository's top-level entries git tracks (so ``examples/...`` resolves,
outputs stay out of the clone, and a user's own files, such as the README job's ``results.jsonl``,
stay out of the snippets), with this interpreter's environment first on ``PATH``. Two markers, on
the line directly above a block, change that:

- ``<!-- doc-test: skip REASON -->``: not run (a trainer launch, a server that runs until stopped,
  an install). Its commands are still checked: ``rewardkit`` lines parse with the CLI's own
  parser, local installs name folders and extras that exist, scripts and their flags exist, the
  rewardkit files and functions a trainer is pointed at exist, and imports of rewardkit modules
  name things those modules define.
- ``<!-- doc-test: file PATH -->``: the block must equal the file at PATH (relative to the root).

Each document is run in the tox env that has what its snippets need (``DOC_ENVS``); the core env
runs the ``core`` ones and does every static check, and each env in ``RUNNER_ENVS`` has a test that
runs its own documents' blocks (``rl_pack/tests``, ``plugins/service/tests``,
``plugins/checkpoints/tests``). A block that calls ``curl`` on ``127.0.0.1:8000`` runs against its
document's own ``rewardkit serve`` line, started on a free port (``run_checked``).

Installs are checked against this repository's pyproject files: a local install (``pip install .
./plugins/service[server]``) must name distribution folders and extras they declare, must not use
an extra that fetches another of our distributions from an index (from a checkout, install its
folder), and must bring the folders of the distributions it depends on (the core excepted); an
install by name (``pip install 'rewardkit-core[service]'``) must name one of our distributions and
its extras. ``rewardkit`` itself is not a name of ours: PyPI treats it as ``reward-kit``, another
vendor's library.
"""

from __future__ import annotations

import ast
import configparser
import contextlib
import functools
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # the core depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

# Where each document's runnable blocks run. A new document must be added here (the test says so):
# routing by guess would let a snippet needing a plugin skip silently in an env without it.
DOC_ENVS: dict[str, str] = {
    "README.md": "core",
    "docs/audit.md": "audit",
    "docs/bindings.md": "bindings",
    "docs/checkpoints.md": "checkpoints",
    "docs/code_rewards.md": "rl",
    "docs/composition.md": "core",
    "docs/configuration.md": "core",
    "docs/dancegrpo.md": "dancegrpo",
    "docs/media.md": "media",
    "docs/monitor.md": "monitor",
    "docs/nih_judge.md": "nih_judge",
    "docs/performance.md": "core",
    "docs/plugins.md": "core",
    # audit: the one env with the service, the judges and the sandbox its protocols and graders need
    "docs/protocols.md": "audit",
    "docs/ray.md": "ray",
    "docs/reward_models.md": "rm",
    "docs/service.md": "service",
    "docs/stats.md": "stats",
    "docs/streaming.md": "core",
    "docs/serving.md": "vllm",
    "docs/t2i.md": "t2i",
    "docs/verifiers.md": "rl",
    "docs/viewing.md": "view",
    "docs/writing_providers.md": "core",
}
# Envs with a test that runs their documents' blocks; a runnable block elsewhere is an error.
RUNNER_ENVS = (
    "core",
    "rl",
    "service",
    "checkpoints",
    "media",
    "nih_judge",
    "audit",
    "monitor",
    "view",
    "bindings",
    "stats",
)
RUN_LANGS = ("bash", "sh", "console", "python")
MARKER = re.compile(r"^<!-- doc-test: (skip|file) ?(.*?) -->$")
FENCE = re.compile(r"^(`{3,})([\w+-]*)[^\n]*$")
# Packages a doc may launch with `python -m` that are checked in their own tox envs, not here.
TRAINER_PACKAGES = ("verl", "openrlhf", "vllm")
# The address a document's `rewardkit serve` line listens on; curl blocks that name it run against it.
SERVICE = "127.0.0.1:8000"


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: str | None  # "skip" or "file"
    argument: str  # the skip reason or the file path

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def documents() -> list[str]:
    return ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]


def blocks(doc: str) -> list[Block]:
    lines = (ROOT / doc).read_text().splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = next(
            (j for j in range(index + 1, len(lines)) if lines[j].strip() == opening.group(1)), len(lines)
        )
        marker = MARKER.match(lines[index - 1].strip()) if index else None
        found.append(
            Block(
                doc,
                index + 1,
                opening.group(2),
                "".join(line + "\n" for line in lines[index + 1 : end]),
                marker.group(1) if marker else None,
                marker.group(2).strip() if marker else "",
            )
        )
        index = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for doc in documents() for block in blocks(doc)]


def runnable(block: Block) -> bool:
    return block.lang in RUN_LANGS and block.marker is None


def shell_commands(block: Block) -> str:
    """The shell text of a block: for ``console``, the ``$ `` lines without their prompt."""
    if block.lang != "console":
        return block.text
    return "".join(line[2:] + "\n" for line in block.text.splitlines() if line.startswith("$ "))


# -- running -----------------------------------------------------------------------------------


# Top-level files a checkout without git still links (the tracked kinds; outputs are .jsonl/.json).
_SOURCE_SUFFIXES = (".md", ".toml", ".ini", ".py", ".cfg", ".txt")


@functools.cache
def _tracked_entries(root: Path) -> tuple[str, ...] | None:
    """The top-level names under which git tracks files in ``root``; ``None`` without git."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, timeout=60, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return tuple(sorted({name.split("/", 1)[0] for name in done.stdout.split("\0") if name}))


def _linked_entries(root: Path) -> list[Path]:
    """What a scratch folder links: the entries git tracks, never what a user made in the checkout
    (the README's job leaves ``results.jsonl`` and its manifest in the root, and a snippet writing
    ``--out results.jsonl`` would find that finished run). A new top-level entry is seen once it is
    ``git add``-ed. Without git (an unpacked archive), the folders and source files, not hidden or
    build outputs."""
    tracked = _tracked_entries(root)
    if tracked is not None:
        return [root / name for name in tracked if (root / name).exists()]
    return [
        entry
        for entry in sorted(root.iterdir())
        if not entry.name.startswith(".")
        and entry.name != "build"
        and not entry.name.endswith(".egg-info")
        and (entry.is_dir() or entry.suffix in _SOURCE_SUFFIXES)
    ]


def scratch(tmp: Path, root: Path = ROOT) -> Path:
    """A working folder whose top-level entries link to the repository's tracked ones (outputs land
    here, and files a user left in the checkout stay out)."""
    for entry in _linked_entries(root):
        if not (tmp / entry.name).exists():
            (tmp / entry.name).symlink_to(entry)
    return tmp


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = ""
    return env


def run_block(block: Block, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    if block.lang == "python":
        script = cwd / f"snippet_{block.line}.py"
        script.write_text(block.text)
        argv = [sys.executable, str(script)]
    else:
        argv = ["bash", "-euo", "pipefail", "-c", shell_commands(block)]
    return subprocess.run(argv, cwd=cwd, env=environment(), capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def service_for(doc: str, cwd: Path) -> Iterator[str]:
    """Start the document's own `rewardkit serve` line on a free loopback port; yield host:port."""
    lines = [
        line.split("#")[0].strip()
        for b in blocks(doc)
        for line in shell_commands(b).splitlines()
        if line.startswith("rewardkit serve ")
    ]
    assert len(lines) == 1, f"{doc}: a curl snippet needs exactly one `rewardkit serve` line, found {lines}"
    command = lines[0].replace("--port 8000", "--port 0").split()
    server = subprocess.Popen(
        command, cwd=cwd, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    seen = []
    try:
        assert server.stdout is not None
        deadline = time.monotonic() + 120
        address = None
        while address is None and time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line and server.poll() is not None:
                break
            seen.append(line)
            found = re.search(r"listening on http://(127\.0\.0\.1:\d+)", line)
            address = found.group(1) if found else None
        assert address, f"{doc}: `{' '.join(command)}` did not start:\n{''.join(seen)}"
        yield address
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def run_checked(block: Block, tmp_path: Path) -> str:
    """Run ``block`` from a scratch folder under ``tmp_path`` and fail on a non-zero exit; a curl
    block naming ``SERVICE`` runs against its document's `rewardkit serve` line and must get an
    answer that is not an error. Returns the block's stdout."""
    cwd = scratch(tmp_path)
    if SERVICE in block.text and "curl" in block.text:
        with service_for(block.doc, cwd) as address:
            moved = Block(block.doc, block.line, block.lang, block.text.replace(SERVICE, address), None, "")
            done = run_block(moved, cwd)
        assert done.returncode == 0, f"{block.where} failed:\n{done.stdout}\n{done.stderr}"
        answer = json.loads(done.stdout)
        assert "error" not in answer, f"{block.where}: the service answered an error: {answer}"
        return done.stdout
    done = run_block(block, cwd)
    assert done.returncode == 0, (
        f"{block.where} failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


# -- static checks of blocks that are not run ---------------------------------------------------

SUBSTITUTION = re.compile(r"\$\(((?:[^()]|\([^()]*\))*)\)")


def _distributions() -> dict[str, Path]:
    """Our distributions by name, with their folders."""
    found = {}
    for pyproject in [
        ROOT / "pyproject.toml",
        *ROOT.glob("*/pyproject.toml"),
        *ROOT.glob("plugins/*/pyproject.toml"),
    ]:
        name = tomllib.loads(pyproject.read_text())["project"]["name"]
        found[name] = pyproject.parent
    return found


def _project(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text())["project"]


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ;@]", requirement.strip(), maxsplit=1)[0]


def _pypi_key(name: str) -> str:
    """A project name as PyPI compares names for "too similar": lower case, without `-`, `_`, `.`."""
    return re.sub(r"[-_.]", "", name).lower()


def _shown(folder: Path) -> str:
    relative = folder.relative_to(ROOT)
    return "." if relative == Path(".") else f"./{relative}"


def _check_pip(args: list[str]) -> list[str]:
    if not args or args[0] != "install":
        return [f"pip {' '.join(args)}: only `pip install` is checked"]
    problems = []
    ours = _distributions()
    by_key = {_pypi_key(name): name for name in ours}
    core = _project(ROOT)["name"]
    local: dict[str, tuple[str, list[str]]] = {}  # installed from a folder: name -> (arg, its requirements)
    for arg in (a for a in args[1:] if not a.startswith("-")):
        target, _, extras = arg.partition("[")
        wanted = [e.strip() for e in extras.split("]")[0].split(",") if e.strip()]
        if target.startswith("."):
            folder = (ROOT / target).resolve()
            if not (folder / "pyproject.toml").is_file():
                problems.append(f"pip install {arg}: {target} is not a distribution folder")
                continue
            project = _project(folder)
            declared = project.get("optional-dependencies", {})
            requirements = list(project.get("dependencies", []))
            for extra in wanted:
                if extra not in declared:
                    problems.append(f"pip install {arg}: no extra {extra!r} in {target}")
                    continue
                for requirement in declared[extra]:
                    name = _requirement_name(requirement)
                    if name in ours and name != project["name"]:
                        problems.append(
                            f"pip install {arg}: the extra {extra!r} installs {name} from an index; "
                            f"from a checkout install its folder ({_shown(ours[name])})"
                        )
                    else:
                        requirements.append(requirement)
            local[project["name"]] = (arg, requirements)
            continue
        name = _requirement_name(target)
        if _pypi_key(name) in by_key:
            declared = _project(ours[by_key[_pypi_key(name)]]).get("optional-dependencies", {})
            problems += [
                f"pip install {arg}: no extra {e!r} in {by_key[_pypi_key(name)]}"
                for e in wanted
                if e not in declared
            ]
        elif _pypi_key(name) == _pypi_key("rewardkit"):
            problems.append(
                f"pip install {arg}: {name} is not ours (PyPI treats it as `reward-kit`, another vendor's "
                f"reward library); the core's distribution is {core}"
            )
    # From a checkout our distributions come from their folders: one installed from its folder
    # must bring the folders of ours it depends on (the core is installed first, on its own line).
    for name, (arg, requirements) in local.items():
        for requirement in requirements:
            needed = _requirement_name(requirement)
            if needed in ours and needed not in local and needed not in (core, name):
                problems.append(
                    f"pip install {arg}: {name} needs {needed}, which is not installed from its folder "
                    f"in the same command ({_shown(ours[needed])})"
                )
    return problems


def _defines(path: Path, name: str) -> bool:
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return True
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (a.asname or a.name.split(".")[0]) == name for a in node.names
        ):
            return True
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            return True  # a lazy module: names resolve at run time
    return False


def _check_python_module(argv: list[str]) -> list[str]:
    module = argv[0]
    if module == "pip":
        return _check_pip(argv[1:])
    problems = []
    if module.split(".")[0] not in TRAINER_PACKAGES and _module_file(module) is None:
        with contextlib.suppress(ImportError, ValueError):
            import importlib.util

            if importlib.util.find_spec(module) is not None:
                return []
        return [f"python -m {module}: no such module"]
    # Trainer settings that point at rewardkit: the file must exist and define the function.
    settings = dict(a.lstrip("+").split("=", 1) for a in argv[1:] if "=" in a and not a.startswith("-"))
    for key, value in settings.items():
        if key.endswith("custom_reward_function.path"):
            path = Path(value)
            if not path.is_file():
                problems.append(f"{key}={value}: no such file")
                continue
            name_key = key.removesuffix("path") + "name"
            function = settings.get(name_key)
            if function is None or not _defines(path, function):
                problems.append(f"{name_key}={function}: {path.name} defines no such function")
    return problems


def _check_script(argv: list[str]) -> list[str]:
    script = ROOT / argv[0]
    if not script.is_file():
        return [f"python {argv[0]}: no such script"]
    source = script.read_text()
    return [
        f"python {argv[0]} {flag}: the script has no such option"
        for flag in (a.split("=")[0] for a in argv[1:] if a.startswith("--"))
        if f'"{flag}"' not in source
    ]


def _check_rewardkit(argv: list[str]) -> list[str]:
    from rewardkit.cli import build_parser

    try:
        with contextlib.redirect_stderr(io.StringIO()) as err, contextlib.redirect_stdout(io.StringIO()):
            build_parser().parse_args(argv)
    except SystemExit as exit_:
        if exit_.code:
            return [f"rewardkit {' '.join(argv)}: {err.getvalue().strip().splitlines()[-1]}"]
    return []


def _check_tox(argv: list[str]) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "tox.ini")
    envs = {s.removeprefix("testenv:") for s in parser.sections() if s.startswith("testenv:")}
    if "-e" in argv:
        wanted = argv[argv.index("-e") + 1].split(",")
        return [f"tox -e {e}: no such env in tox.ini" for e in wanted if e not in envs]
    return []


def _run_substitution(command: str) -> str:
    """The value of a ``$(python -c ...)`` that locates a rewardkit file (cheap: an import)."""
    argv = shlex.split(command)
    if argv[:2] != ["python", "-c"] or "rewardkit" not in argv[2]:
        raise ValueError(f"$({command}): only `python -c` over rewardkit modules is evaluated")
    env = environment()
    # a distribution's file is found in its source folder, installed in this env or not
    env["PYTHONPATH"] = os.pathsep.join(str(src) for src in sorted(ROOT.glob("plugins/*/src")))
    done = subprocess.run(
        [sys.executable, "-c", argv[2]], capture_output=True, text=True, env=env, timeout=120
    )
    if done.returncode:
        raise ValueError(f"$({command}) failed: {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout.strip()


def check_shell(text: str) -> list[str]:
    """Problems with the commands of a shell snippet that is not run."""
    problems: list[str] = []

    def evaluate(match: re.Match[str]) -> str:
        try:
            return _run_substitution(match.group(1))
        except ValueError as error:
            problems.append(str(error))
            return "SUBSTITUTION"

    for logical in text.replace("\\\n", " ").splitlines():
        try:
            tokens = shlex.split(SUBSTITUTION.sub(evaluate, logical), comments=True)
        except ValueError as error:
            problems.append(f"{logical.strip()}: {error}")
            continue
        command: list[str] = []
        for token in [*tokens, ";"]:
            if token not in ("&&", "||", ";", "|"):
                command.append(token)
                continue
            while command and re.fullmatch(r"[A-Z_]+=.*", command[0]):
                command = command[1:]
            if command:
                problems += check_command(command)
            command = []
    return problems


def check_command(argv: list[str]) -> list[str]:
    program, args = argv[0], argv[1:]
    if program in ("python", "python3"):
        if args[:1] == ["-m"]:
            return _check_python_module(args[1:])
        if args[:1] == ["-c"]:
            return []
        return _check_script(args)
    if program == "rewardkit":
        return _check_rewardkit(args)
    if program == "pip":
        return _check_pip(args)
    if program == "tox":
        return _check_tox(args)
    if program == "pytest":
        return [
            f"pytest {a}: no such path" for a in args if not a.startswith("-") and not (ROOT / a).exists()
        ]
    if program in ("unshare", "sh", "bash") and "-c" in args:
        return check_shell(args[args.index("-c") + 1])
    if program in ("export", "cd", "ip", "curl", "echo", "test", "cat"):
        return []
    return [f"{program}: the doc test does not know how to check this command; run the block instead"]


# -- static checks of Python ---------------------------------------------------------------------


def _package_roots() -> dict[str, Path]:
    roots = {"rewardkit": ROOT / "core"}
    for src in [ROOT / "rl_pack" / "src", *ROOT.glob("plugins/*/src")]:
        for package in src.iterdir():
            if (package / "__init__.py").is_file():
                roots[package.name] = package
    return roots


def _module_file(module: str) -> Path | None:
    top, *rest = module.split(".")
    root = _package_roots().get(top)
    if root is None:
        return None
    base = root.joinpath(*rest)
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def check_python(block: Block) -> list[str]:
    """A Python snippet that is not run parses, and its imports of our packages resolve."""
    try:
        tree = ast.parse(block.text)
    except SyntaxError as error:
        return [f"does not parse: {error}"]
    problems = []
    roots = _package_roots()
    for node in ast.walk(tree):
        modules: list[tuple[str, list[str]]] = []
        if isinstance(node, ast.Import):
            modules = [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [(node.module, [alias.name for alias in node.names])]
        for module, names in modules:
            if module.split(".")[0] not in roots:
                continue
            path = _module_file(module)
            if path is None:
                problems.append(f"import {module}: no such module in this repository")
                continue
            for name in names:
                if _module_file(f"{module}.{name}") is None and not _defines(path, name):
                    problems.append(f"from {module} import {name}: {path.relative_to(ROOT)} has no {name}")
    return problems


def provider_names_in_source() -> set[str]:
    """Every quoted string in the code of the distributions and examples (provider names among them)."""
    names: set[str] = set()
    folders = [ROOT / "core", ROOT / "rl_pack" / "src", ROOT / "examples", *ROOT.glob("plugins/*/src")]
    for folder in folders:
        for path in folder.rglob("*.py"):
            names.update(re.findall(r"""["']([a-z0-9][a-z0-9._-]*)["']""", path.read_text()))
    return names
