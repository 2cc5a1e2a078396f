"""Every command block of the README and of the docs, and every example in `dyn … --help`,
runs as written (#15 item 6).

The blocks run in order in one scratch folder holding a copy of `robots/` and
`scenarios/`, so a block may use the files an earlier one wrote (as a reader going
down the page would). Fences:

- ``sh``: run by bash with ``set -e`` (as typed: `dyn … | head` ends on a closed pipe); it must exit 0. The set-up block's
  ``pip install … &&`` and ``python -m pytest`` are what CI runs around this test, so
  they are left out; the Dask block runs its scheduler and worker on this machine
  (HEAD = 127.0.0.1, a free port); the benchmark block runs each script with small
  sizes (the suite's time), which is the only change to a command;
- ``console``: ``$ command`` lines, each followed by the output it must print
  (standard output and error together, exactly);
- ``python``: run by ``python -``; it must exit 0.
Unlabelled fences are printed results, not commands.

The `--help` examples (the lines starting with ``dyn`` after "Examples:") run last,
in the same folder, after the README's blocks made the files they name.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import wait_for

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
BENCH_SIZES = {  # the benchmark block's scripts at sizes that take seconds, not minutes
    "bench_kernels.py": "--rows 300 --calls 200",
    "bench_simulate.py": "--steps 300 --repeat 1 --command-steps 100",
    "bench_inverse.py": "--rows 2000 --repeat 1",
    "bench_inverse_many.py": "--files 3 --seconds 0.2 --repeat 1",
    "bench_sweep.py": "--variants 2 --variant-seconds 0.05 --workers 1 --repeat 1",
    "bench_scaling.py": "--links 5,10 --steps 100",
    "bench_startup.py": "--repeat 1 --steps 200 --rows 500",
    "bench_identify.py": "--seconds 2",
    "bench_stages.py": "--steps 200 --repeat 1",
    "bench_contact_id.py": "--rows 300,600",
    "bench_contact_step.py": "--steps 200 --repeat 1",
    "bench_derivatives.py": "--rows 20 --calls 20",
    "bench_limits.py": "--steps 200 --repeat 1",
    "bench_single.py": "--calls 200 --repeat 1",
}

# one worker runs them all, in order (pytest-xdist): a block may use the files an earlier one wrote
pytestmark = [pytest.mark.slow, pytest.mark.readme, pytest.mark.xdist_group("readme")]


def blocks():
    """(id, language, text, file) of every runnable fence, in reading order."""
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            lang = m.group(1)
            if lang in ("sh", "console", "python"):
                line = text.count("\n", 0, m.start()) + 1
                out.append((f"{doc.name}:{line}", lang, m.group(2), doc))
    return out


BLOCKS = blocks()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("readme")
    for sub in ("robots", "scenarios"):
        shutil.copytree(REPO / sub, folder / sub)
    shim = folder / ".bin" / "python"  # a script, not a symlink: a venv's python must find its venv
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    _SHIMS[:] = [shim.parent]
    return folder


_SHIMS = []  # the scratch folder's bin/, holding `python` (set by the scratch fixture)


def environment():
    """This interpreter's environment: `python` in a block is this interpreter (a machine may
    have only python3), and `dyn`, `dask` are its scripts."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    bindir = Path(sys.executable).parent
    env["PATH"] = os.pathsep.join([*map(str, _SHIMS), str(bindir), env.get("PATH", "")])
    env["MPLBACKEND"] = "Agg"
    return env


def shell(script, cwd, timeout=1200):
    return subprocess.run(["bash", "-c", "set -e\n" + script], cwd=cwd, env=environment(),
                          capture_output=True, text=True, timeout=timeout)


def setup_commands(text):
    """The set-up block without what CI itself runs: `pip install … &&` and `python -m pytest`."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"^pip install [^&]*&&\s*", "", line)
        if line.startswith("pip install") or "python -m pytest" in line.split("#")[0] and "&&" not in line:
            continue
        out.append(line)
    return "\n".join(out)


def benchmark_commands(text):
    out = []
    for line in text.splitlines():
        m = re.match(r"python (benchmarks/(bench_\w+\.py))(.*?)(#.*)?$", line)
        assert m is None or m.group(2) in BENCH_SIZES, f"{m.group(2)}: give it small sizes in BENCH_SIZES"
        if m:
            line = f"python {REPO / m.group(1)} {BENCH_SIZES[m.group(2)]}"
        out.append(line)
    return "\n".join(out)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def run_dask_block(text, cwd):
    """The cluster block on this machine: the scheduler and a worker in the background (their
    lines as written, HEAD = 127.0.0.1 and a free port), then the `dyn sweep` line."""
    port = free_port()
    text = text.replace("tcp://HEAD:8786", f"tcp://127.0.0.1:{port}")
    lines = [ln.split("#")[0].strip() for ln in text.splitlines() if ln.strip()]
    background, foreground = [], []
    for ln in lines:
        if ln.startswith("dask scheduler"):
            background.append(ln + f" --host 127.0.0.1 --port {port} --no-dashboard")
        elif ln.startswith("dask worker"):
            background.append(ln.replace("--nworkers 4", "--nworkers 1") + " --no-dashboard")
        else:
            foreground.append(ln)
    procs = []
    try:
        for ln in background:
            procs.append(subprocess.Popen(["bash", "-c", "exec " + ln], cwd=cwd, env=environment(),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
            if ln.startswith("dask scheduler"):  # the worker and the sweep connect to it
                wait_for(lambda: procs[-1].poll() is not None or listening(port), "the dask scheduler listening")
                assert procs[-1].poll() is None, f"{ln}: exited {procs[-1].returncode}"
        return shell("\n".join(foreground), cwd)
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def console_steps(text):
    """[(command, expected output)] of a console block."""
    steps = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append([line[2:], []])
        elif steps:
            steps[-1][1].append(line)
    return [(cmd, "\n".join(out).strip()) for cmd, out in steps]


@pytest.mark.parametrize("where, lang, text, doc", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_block_runs_as_written(scratch, where, lang, text, doc):
    if lang == "python":
        r = subprocess.run([sys.executable, "-"], input=text, cwd=scratch, env=environment(),
                           capture_output=True, text=True, timeout=1200)
    elif lang == "console":
        for cmd, expected in console_steps(text):
            r = shell(cmd, scratch) if not expected else subprocess.run(
                ["bash", "-c", cmd], cwd=scratch, env=environment(), capture_output=True, text=True, timeout=600)
            if expected:
                got = (r.stdout + r.stderr).strip()
                assert got == expected, f"{where}: $ {cmd}\nexpected: {expected}\ngot:      {got}"
            else:
                assert r.returncode == 0, f"{where}: $ {cmd}\n{r.stderr}"
        return
    elif "dask scheduler" in text:
        r = run_dask_block(text, scratch)
    elif "benchmarks/bench_" in text:
        r = shell(benchmark_commands(text), scratch)
    elif "pip install" in text:
        r = shell(setup_commands(text), scratch)
    else:
        r = shell(text, scratch)
    assert r.returncode == 0, f"{where} exited {r.returncode}:\n{text}\n--- stderr:\n{r.stderr[-3000:]}"


def set_up_outputs():
    """The files the README's Set up block writes (`-o NAME`), and the README's other sh blocks."""
    readme = [(where, text) for where, lang, text, doc in BLOCKS if doc.name == "README.md" and lang == "sh"]
    setup = next(text for _, text in readme if "pip install -e . &&" in text)
    return re.findall(r"-o\s+(\S+)", setup), [(w, t) for w, t in readme if t is not setup]


def mentions(name, text):
    return re.search(rf"(?<![\w./-]){re.escape(name)}(?![\w./-])", text) is not None


def test_no_tour_block_reads_what_only_the_set_up_wrote():
    """A reader who skips the Set up's run (an empty folder) can still run every block: a block that
    reads the Set up's traj.csv writes it first (#29: the tour's `dyn inverse … traj.csv` needed it)."""
    made, blocks = set_up_outputs()
    assert made == ["traj.csv"]
    needs = [where for where, text in blocks for name in made
             if mentions(name, text) and not re.search(rf"(-o|>)\s*{re.escape(name)}(?![\w./-])", text)]
    assert needs == []


def test_the_blocks_that_use_the_set_up_outputs_run_in_an_empty_folder(tmp_path):
    made, blocks = set_up_outputs()
    using = [(where, text) for where, text in blocks if any(mentions(name, text) for name in made)]
    assert using
    for k, (where, text) in enumerate(using):
        folder = tmp_path / f"b{k}"
        for sub in ("robots", "scenarios"):
            shutil.copytree(REPO / sub, folder / sub)
        r = shell(text, folder)
        assert r.returncode == 0, f"{where} in an empty folder exited {r.returncode}:\n{r.stderr[-2000:]}"


def help_examples():
    """(command name, example line) of every `dyn … --help` epilog."""
    from click.testing import CliRunner

    from cli.main import COMMANDS, dyn

    out = []
    for name in ["", *COMMANDS]:
        text = CliRunner().invoke(dyn, [*([name] if name else []), "--help"]).output
        if "Examples:" not in text:
            continue
        lines, joined = text.split("Examples:", 1)[1].splitlines(), []
        for line in lines:
            s = line.strip()
            if joined and joined[-1].endswith("\\"):
                joined[-1] = joined[-1][:-1] + " " + s
            elif s.startswith("dyn "):
                joined.append(s)
            elif s and not line.startswith("    ") and joined:
                break
        out += [(name or "dyn", ex) for ex in joined]
    return out


def test_every_command_has_help_examples_and_they_run(scratch):
    """Run after the blocks above (same folder, same module, defined later)."""
    examples = help_examples()
    names = {name for name, _ in examples}
    from cli.main import COMMANDS

    assert set(COMMANDS) <= names, f"commands without examples: {sorted(set(COMMANDS) - names)}"
    failures = []
    for name, example in examples:
        if "--scheduler tcp://" in example:  # a cluster's address: the README's cluster block runs one here
            continue
        r = shell(example, scratch)
        if r.returncode != 0:
            failures.append(f"dyn {name} --help: {example}\n    {r.stderr.strip().splitlines()[-6:]}")  # every command of a pipe
    assert not failures, "\n".join(failures)
