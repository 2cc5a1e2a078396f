"""Published models that are not physical (issue 30, item 7): FloBaRoID's transcription of a published
KUKA LWR has four inertias that are not positive semi-definite, its identified model a negative
friction. The commands that only evaluate a model (inverse, contact-id, identify's prior, info) read
them with one `dyn: warning:` each, naming the link or joint and file:line; the commands that
integrate (simulate, energy-check, sweep) refuse them, saying why. `dynlib.load(..., strict=False)`
is the library's way to say "for evaluation"; the default stays strict."""
import json
import re

import numpy as np
import pytest

import dynlib
from dynlib.errors import URDFError
from dynlib.files.trajectory import column_names, read_trajectory, write_trajectory
from dynlib.motion.inverse import joint_friction_torques
from helpers import ROBOTS_DIR, PinMap, invoke
from tests.motion.test_derivatives import smooth_motion

ARM7 = ROBOTS_DIR / "arm7.urdf"
# link: its <inertia> as a published transcription has it (each not positive semi-definite)
NON_PSD = {
    "link1": 'ixx="-0.002" ixy="0" ixz="0" iyy="0.013675" iyz="0" izz="0.00735"',
    "link2": 'ixx="0.015775" ixy="0.03" ixz="0" iyy="0.015775" iyz="0" izz="0.00735"',
    "link3": 'ixx="0.0109" ixy="0" ixz="0" iyy="0.0109" iyz="0" izz="-0.0004"',
    "link5": 'ixx="0.00762" ixy="0" ixz="0.009" iyy="0.00762" iyz="0" izz="0.00324"',
}
NEGATIVE_FRICTION = ("joint3", '<dynamics damping="0.8" friction="-0.25"/>')


def published(folder, friction=True):
    """arm7 with the four NON_PSD inertias (and, with `friction`, joint3's negative friction)."""
    text = ARM7.read_text()
    for link, inertia in NON_PSD.items():
        head, sep, tail = text.partition(f'<link name="{link}">')
        tail = re.sub(r"<inertia [^/]*/>", f"<inertia {inertia}/>", tail, count=1)
        text = head + sep + tail
    if friction:
        head, sep, tail = text.partition(f'<joint name="{NEGATIVE_FRICTION[0]}"')
        text = head + sep + re.sub(r"<dynamics [^/]*/>", NEGATIVE_FRICTION[1], tail, count=1)
    path = folder / ("published.urdf" if friction else "published_no_friction.urdf")
    path.write_text(text)
    return path


def line_of(path, needle, after=None):
    lines = path.read_text().splitlines()
    start = 0 if after is None else next(i for i, s in enumerate(lines) if after in s)
    return next(i for i in range(start, len(lines)) if needle in lines[i]) + 1


@pytest.fixture(scope="module")
def robot(tmp_path_factory):
    return published(tmp_path_factory.mktemp("published"))


def write_motion(path, model, seed):
    """A smooth 0.3 s motion of `model` at 1 kHz with the model's own torques (tau.*): (path, Q, V, A)."""
    t = np.arange(300) * 1e-3
    Q, V, A = smooth_motion(model, t, seed=seed)
    tau = dynlib.rnea(model, Q, V, A) + joint_friction_torques(model, V)
    names = column_names(model.q_names, model.v_names, ("q", "qd", "qdd", "tau"))
    write_trajectory(path, names, np.hstack([t[:, None], Q, V, A, tau]))
    return path, Q, V, A


@pytest.fixture(scope="module")
def motion(robot):
    return write_motion(robot.parent / "motion.csv", dynlib.load(robot, strict=False), seed=3)


@pytest.fixture(scope="module")
def floating_motion(robot):
    return write_motion(robot.parent / "floating.csv", dynlib.load(robot, floating_base=True, strict=False), seed=4)


def link_tag(name):
    return f'<link name="{name}">'


def joint_tag(name):
    return f'<joint name="{name}"'


def expected_warnings(robot):
    out = [f"{robot}:{line_of(robot, '<inertia ', after=link_tag(link))}: link '{link}': inertia is not "
           "positive semi-definite" for link in NON_PSD]
    joint = NEGATIVE_FRICTION[0]
    out.append(f"{robot}:{line_of(robot, '<dynamics', after=joint_tag(joint))}: joint '{joint}': "
               "negative damping or friction (damping 0.8, friction -0.25)")
    return out


def test_load_is_strict_by_default_and_evaluates_on_request(robot):
    with pytest.raises(URDFError, match="not positive semi-definite.*simulate, energy-check and sweep refuse"):
        dynlib.load(robot)
    model = dynlib.load(robot, strict=False)
    for w in expected_warnings(robot):
        assert sum(x.startswith(w) for x in model.warnings) == 1, (w, model.warnings)
    assert model.arrays.friction[model.v_names.index("joint3")] == -0.25


def test_a_negative_mass_is_refused_either_way(tmp_path):
    """Pinocchio reads a negative mass, but into nonsense (a centre of mass of 1e30 m): dyn refuses it."""
    text = ARM7.read_text()
    head, sep, tail = text.partition('<link name="link2">')
    path = tmp_path / "negative_mass.urdf"
    path.write_text(head + sep + re.sub(r'<mass value="[^"]*"/>', '<mass value="-1.5"/>', tail, count=1))
    for strict in (True, False):
        with pytest.raises(URDFError, match="mass -1.5 is negative"):
            dynlib.load(path, strict=strict)


@pytest.mark.parametrize("command", ["inverse", "info", "identify", "contact-id"])
def test_evaluating_commands_read_it_with_one_warning_each(robot, motion, floating_motion, tmp_path, command):
    path = motion[0]
    args = {"inverse": (robot, path, "-o", tmp_path / "tau.csv"),
            "info": (robot,),
            "contact-id": (robot, floating_motion[0], "--contact", "link0", "-o", tmp_path / "f.csv"),
            "identify": (robot, path, "-o", tmp_path / "id.urdf", "--max-condition", "inf")}
    r = invoke(command, *args[command])
    warned = r.stdout if command == "info" else r.stderr
    for w in expected_warnings(robot):
        assert warned.count(w) == 1, (command, w, r.stdout, r.stderr)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("command", ["simulate", "energy-check", "sweep"])
def test_integrating_commands_refuse_it_with_the_reason(robot, tmp_path, command):
    target = robot
    if command == "sweep":
        target = tmp_path / "sweep.yaml"
        target.write_text(f"dyn: 1\nrobot: {robot}\ndt: 0.001\nduration: 0.01\nsweep:\n  grid:\n    dt: [0.001, 0.002]\n")
    args = {"simulate": ("--steps", "10", "-o", tmp_path / "out.csv"), "energy-check": (),
            "sweep": ("-o", tmp_path / "runs")}[command]
    r = invoke(command, target, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("dyn: error: ") and line.count("dyn:") == 1
    assert (f"{robot}:{line_of(robot, '<inertia ', after=link_tag('link1'))}: link 'link1': inertia is not positive "
            "semi-definite") in line, r.stderr
    assert "forward dynamics with them is not defined" in line and "inverse, contact-id" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == (["sweep.yaml"] if command == "sweep" else [])


def test_inverse_torques_equal_pinocchios_on_the_published_model(robot, motion, tmp_path):
    """RNEA does not care whether an inertia is positive semi-definite: dyn inverse's torques on the
    published-style model are Pinocchio's rnea plus the URDF's joint friction (Pinocchio 4 refuses the
    negative friction itself, so it evaluates the same file without it)."""
    pin = pytest.importorskip("pinocchio")
    path, Q, V, A = motion
    r = invoke("inverse", robot, path, "-o", tmp_path / "tau.csv")
    assert r.returncode == 0, r.stderr
    model = dynlib.load(robot, strict=False)
    tau = read_trajectory(tmp_path / "tau.csv").columns([f"tau.{n}" for n in model.v_names])
    pm = pin.buildModelFromUrdf(str(published(tmp_path, friction=False)))
    pd, pmap = pm.createData(), PinMap(model, pm)
    expected = np.array([pmap.v_back(pin.rnea(pm, pd, pmap.q(q), pmap.v(v), pmap.v(a))) for q, v, a in zip(Q, V, A)])
    expected += joint_friction_torques(model, V)
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(tau, expected, rtol=0, atol=1e-10 * scale)


def test_info_json_lists_the_warnings(robot):
    r = invoke("info", robot, "--json")
    assert r.returncode == 0, r.stderr
    warnings = json.loads(r.stdout)["warnings"]
    for w in expected_warnings(robot):
        assert sum(x.startswith(w) for x in warnings) == 1, (w, warnings)
