"""Helpers shared by the test suite (importable; conftest.py wraps some as fixtures).

- `ROBOTS_DIR`, `sample(name, floating_base)`: the repo's sample robots, loaded once;
- `erd_path(relpath)`: a URDF of the example-robot-data package (skips when absent);
- `random_urdf` / `random_tree(nb, seed)`: a random URDF tree written to a temporary
  folder and loaded with `dynlib.load`;
- `random_state(model, rng)`: q, v, a for a model;
- `rel_err`, `assert_close`: errors relative to max(1, |reference|), with the worst
  error of each named check over the passing tests kept in `WORST` (printed by
  conftest at the end of a verbose run);
- `PinMap`: coordinate maps between dynlib and Pinocchio for one robot;
- `invoke(*args)`: a dyn command in this process (CliRunner); `run_process(*args)`: the console
  entry point in a child, where a process property is under test; `wait_for(condition, what)`:
  polls with a deadline (no fixed waits);
- model structure (`ancestors`, `related_dofs`, ...), spatial helpers (`adjoint`,
  `body_jacobian`, `se3_log`), `poison_next_alloc` / `coriolis_poisoned` (outputs
  that a kernel leaves unwritten read NaN), hypothesis settings (`few`, `seeds`);
"""
from __future__ import annotations

import functools
import importlib.metadata
import inspect
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import dynlib

ROBOTS_DIR = Path(__file__).resolve().parent.parent / "robots"
SAMPLE_ROBOTS = ("pendulum", "double_pendulum", "planar3", "arm6", "arm7", "quadruped", "biped")
EPS = np.finfo(float).eps
SQRT_EPS = math.sqrt(EPS)


# -- robots ------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def sample(name: str, floating_base: bool = False) -> dynlib.Model:
    """A sample robot of robots/ by stem ('arm6'), loaded once per session."""
    return dynlib.load(ROBOTS_DIR / f"{name}.urdf", floating_base=floating_base)


@functools.lru_cache(maxsize=None)
def erd_dir() -> Path:
    """The robots/ folder of the installed example-robot-data distribution."""
    try:
        dist = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed (test extra)")
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    if not path.is_dir():
        pytest.skip(f"example-robot-data has no robots folder at {path}")
    return path


def erd_path(relpath: str) -> Path:
    """An example-robot-data URDF ('ur_description/urdf/ur5_robot.urdf'); skips when missing."""
    path = erd_dir() / relpath
    if not path.is_file():
        pytest.skip(f"example-robot-data has no {relpath}")
    return path


# -- random trees ------------------------------------------------------------------------

TREE_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")


def _f(x) -> str:
    return " ".join(repr(float(v)) for v in np.atleast_1d(x))


def _n(x) -> str:
    return repr(float(x))


def _inertial(rng) -> str:
    """A valid <inertial>: a solid box's inertia (triangle inequality holds), rotated and offset."""
    m = rng.uniform(0.2, 3.0)
    a, b, c = rng.uniform(0.05, 0.6, 3)
    ixx, iyy, izz = m / 12 * (b * b + c * c), m / 12 * (a * a + c * c), m / 12 * (a * a + b * b)
    return (f'    <inertial>\n      <origin xyz="{_f(rng.uniform(-0.2, 0.2, 3))}" rpy="{_f(rng.uniform(-np.pi, np.pi, 3))}"/>\n'
            f'      <mass value="{_n(m)}"/>\n'
            f'      <inertia ixx="{_n(ixx)}" ixy="0" ixz="0" iyy="{_n(iyy)}" iyz="0" izz="{_n(izz)}"/>\n'
            f'    </inertial>\n')


def _axis(rng) -> np.ndarray:
    if rng.random() < 0.5:
        ax = np.zeros(3)
        ax[rng.integers(3)] = rng.choice([-1.0, 1.0])
        return ax
    ax = rng.normal(size=3)
    return ax / np.linalg.norm(ax)


def random_urdf(nb: int, seed: int, joint_types=TREE_JOINT_TYPES) -> str:
    """The text of a random URDF tree: a root link `link0` and `nb` more links.

    Each new link hangs from a uniformly chosen earlier link (random branching)
    through a joint of a random type among `joint_types`, with a random axis
    (half of them ± a coordinate axis) and a random origin with rpy. Every link
    moved by a joint and the root link have a random valid inertia (a rotated,
    offset solid box); a link behind a fixed joint is massless one time in three
    (a pure frame). Links and joints are written in shuffled document order with
    names that do not sort in tree order, so that ordering conventions show.
    """
    rng = np.random.default_rng(seed)
    types = [str(rng.choice(joint_types)) for _ in range(nb)]
    if nb and all(t == "fixed" for t in types):
        types[0] = next(t for t in joint_types if t != "fixed") if set(joint_types) - {"fixed"} else "revolute"
    links = ['  <link name="link0">\n' + _inertial(rng) + "  </link>\n"]
    joints = []
    for k in range(1, nb + 1):
        t = types[k - 1]
        parent = int(rng.integers(k))
        massless = t == "fixed" and rng.random() < 1 / 3
        links.append(f'  <link name="link{k}">\n' + ("" if massless else _inertial(rng)) + "  </link>\n")
        name = f"{'abcdefghij'[rng.integers(10)]}{k}_{t[:3]}"
        body = (f'  <joint name="{name}" type="{t}">\n'
                f'    <parent link="link{parent}"/>\n    <child link="link{k}"/>\n'
                f'    <origin xyz="{_f(rng.uniform(-0.5, 0.5, 3))}" rpy="{_f(rng.uniform(-np.pi, np.pi, 3))}"/>\n')
        if t != "fixed":
            body += f'    <axis xyz="{_f(_axis(rng))}"/>\n'
        if t == "revolute":
            body += '    <limit lower="-2.8" upper="2.8" effort="100" velocity="10"/>\n'
        elif t == "prismatic":
            body += '    <limit lower="-0.5" upper="0.5" effort="100" velocity="1"/>\n'
        joints.append(body + "  </joint>\n")
    elements = links + joints
    order = rng.permutation(len(elements))
    return (f'<?xml version="1.0"?>\n<robot name="tree_{nb}_{seed}">\n'
            + "".join(elements[i] for i in order) + "</robot>\n")


_TREE_DIR = None


def random_tree(nb: int, seed: int, floating_base: bool = False, joint_types=TREE_JOINT_TYPES,
                directory=None) -> dynlib.Model:
    """`random_urdf(nb, seed)` written to `directory` (a temporary folder by default), loaded."""
    global _TREE_DIR
    if directory is None:
        if _TREE_DIR is None:
            _TREE_DIR = tempfile.TemporaryDirectory(prefix="dyn-trees-")
        directory = _TREE_DIR.name
    tag = "".join(t[0] for t in joint_types)
    path = Path(directory) / f"tree_{nb}_{seed}_{tag}.urdf"
    if not path.exists():
        path.write_text(random_urdf(nb, seed, joint_types))
    return dynlib.load(path, floating_base=floating_base)


# -- states and errors -------------------------------------------------------------------

def random_state(model, rng, scale: float = 1.0):
    """(q, v, a): q by dynlib.random_configuration (±scale for unbounded joints), v and a in [-1, 1]."""
    q = dynlib.random_configuration(model, rng, scale=scale)
    return q, rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)


def with_armature(model, rng):
    """The model with a random rotor inertia (armature) in [0.01, 0.2] on each DoF."""
    return model.with_armature(rng.uniform(0.01, 0.2, model.nv))


def rel_err(actual, ref) -> float:
    """max |actual - ref| / max(1, max |ref|)."""
    actual, ref = np.asarray(actual, dtype=float), np.asarray(ref, dtype=float)
    assert actual.shape == ref.shape, f"shape {actual.shape} != reference shape {ref.shape}"
    if actual.size == 0:
        return 0.0
    return float(np.max(np.abs(actual - ref)) / max(1.0, float(np.max(np.abs(ref)))))


WORST: dict = {}   # check name -> (worst relative error, where), over the tests that passed
PENDING: list = []  # (check name, error, where) of the running test; conftest merges them into WORST


def merge_pending(passed: bool):
    if passed:
        for what, err, where in PENDING:
            if err > WORST.get(what, (-1.0, ""))[0]:
                WORST[what] = (err, where)
    PENDING.clear()


def assert_close(actual, ref, tol: float, what: str, where: str = ""):
    """Assert rel_err(actual, ref) <= tol, noting the error of `what` (at the running test and `where`)."""
    err = rel_err(actual, ref)
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split("::")[-1].removesuffix(" (call)")
    where = f"{test} {where}".strip()
    PENDING.append((what, err, where))
    assert err <= tol, f"{what}{f' ({where})' if where else ''}: relative error {err:.3e} > {tol:.1e}"


def basis(n: int, k: int) -> np.ndarray:
    e = np.zeros(n)
    e[k] = 1.0
    return e


# -- Pinocchio -----------------------------------------------------------------------------

def pinocchio_model(path, floating: bool = False):
    """Pinocchio's model of the URDF at `path`, with a free-flyer root when `floating` (as
    ``dynlib.load(path, floating_base=True)`` adds one)."""
    import pinocchio as pin

    return pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(str(path))


class PinMap:
    """Coordinate maps between a dynlib model and the Pinocchio model of the same URDF.

    Joints are matched by name (dynlib's free-flyer 'root' is Pinocchio's joint 1 when
    built with JointModelFreeFlyer()). Pinocchio may order joints differently and gives
    a continuous joint nq = 2 (cos, sin) where dynlib has one angle, a planar joint (x, y, cos, sin).
    """

    def __init__(self, model, pm):
        import pinocchio as pin

        self.model, self.pm = model, pm
        ar = model.arrays
        self.jid = []            # Pinocchio joint id of each dynlib body
        self.perm = np.zeros(model.nv, dtype=int)   # v_pin[perm] = v_dyn
        self._q = []             # (dyn iq, pin idx_q, nq, continuous)
        for k, name in enumerate(model.joint_names):
            jid = 1 if (name == "root" and model.has_floating_base and k == 0) else pm.getJointId(name)
            if jid >= pm.njoints:
                raise KeyError(f"Pinocchio model has no joint '{name}'")
            j = pm.joints[jid]
            nvk = int(ar.nvj[k])
            if j.nv != nvk:
                raise ValueError(f"joint '{name}': nv {nvk} in dynlib, {j.nv} in Pinocchio")
            self.jid.append(jid)
            self.perm[ar.idx_v[k]:ar.idx_v[k] + nvk] = np.arange(j.idx_v, j.idx_v + nvk)
            continuous = (j.nq == 2 and j.nv == 1) or (j.nq == 4 and j.nv == 3)  # (cos, sin); planar (x, y, cos, sin)
            self._q.append((int(ar.idx_q[k]), j.idx_q, j.nq, continuous))
        self.pin = pin

    def q(self, q_dyn) -> np.ndarray:
        out = self.pin.neutral(self.pm)
        for iq, pq, n, cont in self._q:
            if cont and n == 4:
                out[pq:pq + 2], iq, pq = q_dyn[iq:iq + 2], iq + 2, pq + 2
            if cont:
                out[pq], out[pq + 1] = math.cos(q_dyn[iq]), math.sin(q_dyn[iq])
            else:
                out[pq:pq + n] = q_dyn[iq:iq + n]
        return out

    def q_back(self, q_pin) -> np.ndarray:
        out = np.zeros(self.model.nq)
        for iq, pq, n, cont in self._q:
            if cont and n == 4:
                out[iq:iq + 2], iq, pq = q_pin[pq:pq + 2], iq + 2, pq + 2
            if cont:
                out[iq] = math.atan2(q_pin[pq + 1], q_pin[pq])
            else:
                out[iq:iq + n] = q_pin[pq:pq + n]
        return out

    def v(self, v_dyn) -> np.ndarray:
        out = np.zeros(self.pm.nv)
        out[self.perm] = v_dyn
        return out

    def v_back(self, v_pin) -> np.ndarray:
        return np.asarray(v_pin)[self.perm]

    def mat(self, M_pin) -> np.ndarray:
        """An nv x nv matrix in dynlib's order."""
        return np.asarray(M_pin)[np.ix_(self.perm, self.perm)]

    def jac(self, J_pin) -> np.ndarray:
        """A (rows, nv) Jacobian with its columns in dynlib's order."""
        return np.asarray(J_pin)[:, self.perm]

    def fext(self, f_dyn):
        """dynlib's (nb, 6) body-frame wrenches as Pinocchio's per-joint StdVec_Force."""
        pin = self.pin
        out = pin.StdVec_Force()
        for _ in range(self.pm.njoints):
            out.append(pin.Force.Zero())
        for k, jid in enumerate(self.jid):
            out[jid] = pin.Force(np.asarray(f_dyn[k], dtype=float))
        return out


# -- model structure, memory, spatial helpers ------------------------------------------------

def ancestors(model, i):
    """Bodies on the path from body i to the world, i included."""
    out, parent = [], model.arrays.parent
    while i >= 0:
        out.append(int(i))
        i = parent[i]
    return out


def has_unrelated_dofs(model) -> bool:
    """True when two DoFs lie on different branches (neither body an ancestor of the other)."""
    nb = model.nb
    anc = [set(ancestors(model, i)) for i in range(nb)]
    return any(j not in anc[i] and i not in anc[j] for i in range(nb) for j in range(i))


def related_dofs(model) -> np.ndarray:
    """(nv, nv) bool: DoFs k, l whose bodies lie on one path to the world (one an ancestor of the other)."""
    ar = model.arrays
    anc = [set(ancestors(model, i)) for i in range(model.nb)]
    b = ar.dof_body
    return np.array([[b[k] in anc[b[l]] or b[l] in anc[b[k]] for l in range(model.nv)] for k in range(model.nv)])


def poison_next_alloc(shape, blocks: int = 4):
    """Free a few NaN-filled arrays of `shape`, so that the next np.empty of that size (which
    numpy's and the C library's allocators serve from a block just freed) starts full of
    NaN: an output entry that a kernel forgets to write then shows, instead of reading as
    whatever the memory held."""
    junk = [np.full(shape, np.nan) for _ in range(blocks)]
    del junk


def coriolis_poisoned(model, q, v) -> np.ndarray:
    """dynlib.coriolis_matrix(model, q, v) into memory that held NaN (after a warm-up call
    that loads the kernel, whose allocations would otherwise come in between)."""
    dynlib.coriolis_matrix(model, q, v)
    poison_next_alloc(np.shape(q)[:-1] + (model.nv, model.nv))
    return dynlib.coriolis_matrix(model, q, v)


def adjoint(R, p) -> np.ndarray:
    """The 6x6 motion transform (linear first) of a frame at (R, p): twist there -> twist here."""
    px = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[3:, 3:] = R
    X[:3, 3:] = px @ R
    return X


def body_jacobian(model, q, i) -> np.ndarray:
    """(6, nv) Jacobian of body i in its own frame (the frame f_ext wrenches are given in)."""
    fid = model.frame_names.index(model.body_links[i])
    ar = model.arrays
    assert ar.frame_body[fid] == i
    return adjoint(ar.frame_R[fid], ar.frame_p[fid]) @ dynlib.frame_jacobian(model, q, fid, "local")


def se3_log(T) -> np.ndarray:
    """The twist (linear first) xi with exp(xi) = T, for a 4x4 homogeneous T (rotation angle < pi)."""
    R, p = T[:3, :3], T[:3, 3]
    c = np.clip((np.trace(R) - 1) / 2, -1.0, 1.0)
    th = math.acos(c)
    W = (R - R.T) / 2
    w = np.array([W[2, 1], W[0, 2], W[1, 0]]) * (1.0 if th < 1e-8 else th / math.sin(th))
    wx = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
    if th < 1e-8:
        Vinv = np.eye(3) - wx / 2
    else:
        Vinv = np.eye(3) - wx / 2 + (1 - th * math.sin(th) / (2 * (1 - math.cos(th)))) / th ** 2 * wx @ wx
    return np.concatenate([Vinv @ p, w])


# -- the dyn command ------------------------------------------------------------------------

class Ran(subprocess.CompletedProcess):
    """What a `dyn` command did, in this process (`invoke`) or in a child (`run_process`): returncode,
    stdout, stderr (str; bytes with text=False), and click's names for them, exit_code and output
    (standard output then standard error)."""

    @property
    def exit_code(self):
        return self.returncode

    @property
    def output(self):
        return self.stdout + self.stderr


def invoke(*args, input=None, env=None, cwd=None, text=True) -> Ran:
    """`dyn ARGS` in this process: cli.main's group through click's CliRunner, so the exit code and
    the one-line errors are the group's (dyn.main maps every exception), without a new interpreter.

    Not the console script: what `cli.main.run` adds (the gc freeze at exit), signals, file
    descriptors, a real standard input or output, memory and a fresh interpreter's imports are
    tested with `run_process`. `env` sets those variables for the call, `cwd` changes folder for it.
    """
    from click.testing import CliRunner

    from cli.main import dyn

    # click < 8.2 mixes standard error into the output unless told; 8.2 keeps them apart and has no option
    runner = CliRunner(mix_stderr=False) if "mix_stderr" in inspect.signature(CliRunner).parameters else CliRunner()
    here = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        r = runner.invoke(dyn, [str(a) for a in args], input=input, env=env, catch_exceptions=False)
    finally:
        os.chdir(here)
    if text:
        return Ran(list(args), r.exit_code, r.stdout, r.stderr)
    return Ran(list(args), r.exit_code, r.stdout_bytes, r.stderr_bytes)


def run_process(*args, input=None, env=None, cwd=None, text=True, **kw) -> Ran:
    """`python -m cli.main ARGS` (the console script's `run`) in a child process: the exit code and the
    standard streams as a shell sees them. Only where such a process property is under test."""
    p = subprocess.run([sys.executable, "-m", "cli.main", *map(str, args)], input=input, capture_output=True,
                       text=text, env=env, cwd=cwd, **kw)
    return Ran(p.args, p.returncode, p.stdout, p.stderr)


# -- processes ------------------------------------------------------------------------------

def wait_for(condition, what: str, timeout: float = 120.0, interval: float = 0.02):
    """Poll `condition()` until it gives a true value, returned; fail naming `what` after `timeout`
    seconds (a deadline against a hang, never the thing tested: no test waits a fixed time)."""
    end = time.monotonic() + timeout
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > end:
            pytest.fail(f"{what}: not after {timeout:.0f} s")
        time.sleep(interval)


def default_sigint():
    """preexec_fn of a child a test interrupts as Ctrl-C does: SIGINT's default disposition, which
    Python turns into KeyboardInterrupt, whatever this process inherited (a script's job started in
    the background ignores SIGINT, and so would its children: a SIGINT test then failed)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def signal_caught(pid: int, signum: int) -> bool:
    """Process `pid` has a handler of its own for `signum` (its SigCgt mask in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def has_loaded(pid: int, library: str) -> bool:
    """Process `pid` has mapped a shared library whose path holds `library` ('llvmlite': numba is in)."""
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False


# -- hypothesis ------------------------------------------------------------------------------

def few(n: int = 6):
    """Hypothesis settings for state tests: a handful of examples, no deadline (numba compiles)."""
    from hypothesis import HealthCheck, Phase, settings

    # no shrinking: a smaller seed is not a simpler state
    return settings(max_examples=n, deadline=None, phases=(Phase.explicit, Phase.reuse, Phase.generate),
                    suppress_health_check=[HealthCheck.too_slow])


def seeds():
    """A hypothesis strategy of numpy seeds (states are drawn from np.random.default_rng(seed))."""
    from hypothesis import strategies as st

    return st.integers(0, 2 ** 32 - 1)




def variant_killed_as_by_the_oom_killer(task):
    """`dynlib.runs.sweep.worker.run_variant`, except that the worker running variant v001 is killed with
    SIGKILL, as the out-of-memory killer kills it, each time (a test's stand-in, run in spawned workers)."""
    from dynlib.runs.sweep.worker import run_variant

    if task.name == "v001":
        os.kill(os.getpid(), signal.SIGKILL)
    return run_variant(task)
