"""dynlib.sim.joint_limits: a URDF's position limits held and its effort limits enforced in the simulation, on
real URDFs (pybullet_data's kuka_iiwa, example-robot-data's panda with its prismatic fingers): a 2 s zero-torque
fall stays within 0.02 rad / 0.002 m of the limits with every integrator and with contact models, creates no
energy, records the limit torque (inverse dynamics gives back tau + limit); a motion that does not reach a limit
is bit for bit the unlimited one; saturated motor torques are recorded as applied."""
import numpy as np
import pytest

import dynlib
from dynlib.algorithms.rnea import rnea
from dynlib.core import joints as J
from dynlib.errors import InputError
from dynlib.sim.controllers import PD, Constant
from dynlib.sim.simulate import simulate
from helpers import ROBOTS_DIR, erd_path, invoke

INTEGRATORS = ("rk4", "semi-implicit", "euler")
BOUND = {J.REVOLUTE: 0.02, J.PRISMATIC: 0.002}  # rad, m


def kuka():
    pybullet_data = pytest.importorskip("pybullet_data")
    return dynlib.load(f"{pybullet_data.getDataPath()}/kuka_iiwa/model.urdf")


def panda():
    return dynlib.load(erd_path("panda_description/urdf/panda.urdf"))


ROBOTS = {"kuka": kuka, "panda": panda}


def inside(model):
    """The neutral configuration moved inside the limits (the panda's joint4 range excludes 0)."""
    return np.clip(model.q_neutral, model.lower, model.upper)


def worst_excess(model, q):
    """(largest excess over the bound, its coordinate) of the rows q past each coordinate's limits."""
    a = model.arrays
    bound = np.full(model.nq, np.inf)
    for i in range(model.nb):
        if a.jtype[i] in BOUND:
            bound[a.idx_q[i]] = BOUND[a.jtype[i]]
    past = np.maximum(q - model.upper, model.lower - q).max(axis=0)
    ratio = np.where(np.isfinite(past), past / bound, -np.inf)
    k = int(np.argmax(ratio))
    return float(ratio[k]), model.q_names[k]


@pytest.mark.parametrize("integrator", INTEGRATORS)
@pytest.mark.parametrize("robot", ROBOTS)
def test_zero_torque_fall_stays_within_the_limits_and_creates_no_energy(robot, integrator):
    model = ROBOTS[robot]()
    r = simulate(model, inside(model), dt=1e-3, steps=2000, integrator=integrator)
    assert r.diverged is None
    ratio, name = worst_excess(model, r.q)
    assert ratio <= 1.0, (name, ratio)
    free = simulate(model, inside(model), dt=1e-3, steps=2000, integrator=integrator, limits=False)
    assert worst_excess(model, free.q)[0] > 10  # without them the fall goes far past
    E = r.energy[:, 2]
    # the limit pushes inward only, critically damped: it takes energy, never gives (explicit Euler's own
    # growth on the fall's fast swings is bounded relative to the energy the fall moves)
    slack = 0.0 if integrator != "euler" else 1e-4 * np.ptp(r.energy[:, 1])
    assert E.max() <= E[0] + slack, E.max() - E[0]
    assert np.any(r.limit != 0)


@pytest.mark.parametrize("contact, integrator", [("soft", "rk4"), ("unilateral", "semi-implicit"),
                                                 ("relaxed", "semi-implicit"), ("bilateral", "rk4")])
def test_limits_hold_with_every_contact_model(contact, integrator):
    """The kuka's fall onto a ground its flange touches (the bilateral model holds the flange where it starts)."""
    model = kuka()
    points = [{"frame": "lbr_iiwa_link_7"}]
    ground = {"height": 0.8} if contact != "bilateral" else {"height": 1.306}
    r = simulate(model, inside(model), dt=1e-3, steps=2000, integrator=integrator,
                 contacts={"model": contact, "points": points, "ground": ground})
    assert r.diverged is None
    ratio, name = worst_excess(model, r.q)
    assert ratio <= 1.0, (name, ratio)
    assert np.any(r.contact_force != 0)
    if contact != "bilateral":
        assert np.any(r.limit != 0)  # both act


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_a_motion_that_reaches_no_limit_is_the_unlimited_one_bit_for_bit(integrator):
    """rk4's order away from the limits: the limits add nothing there, so the run equals the unlimited one."""
    model = kuka()
    q0 = np.full(model.nq, 0.5)
    on = simulate(model, q0, dt=1e-3, steps=300, integrator=integrator)
    off = simulate(model, q0, dt=1e-3, steps=300, integrator=integrator, limits=False)
    assert worst_excess(model, on.q)[0] < -5  # far from every limit
    for x, y in ((on.q, off.q), (on.v, off.v), (on.a, off.a), (on.tau, off.tau), (on.energy, off.energy)):
        assert np.array_equal(x, y)
    assert not np.any(on.limit) and off.limit is None


def test_inverse_dynamics_of_the_rows_gives_back_tau_plus_limit():
    model = panda()
    r = simulate(model, inside(model), dt=1e-3, steps=1500, integrator="semi-implicit", every=10)
    rows = np.flatnonzero(np.any(r.limit != 0, axis=1))
    assert rows.size > 10
    friction = model.arrays.damping * r.v  # the panda has viscous damping only, if any
    G = model.coupling.G  # its fingers are coupled (dynlib.sim.mimic): the torques of the coupled robot, Gᵀ
    for k in rows[:20]:
        tau = rnea(model, r.q[k], r.v[k], r.a[k])
        np.testing.assert_allclose(tau @ G, (r.tau[k] + r.limit[k] - friction[k]) @ G, rtol=1e-8, atol=1e-6)


def test_limits_option_switches_each_kind():
    model = kuka()
    tau = np.full(model.nv, 1000.0)
    both = simulate(model, inside(model), dt=1e-3, steps=50, controller=Constant(tau))
    assert np.array_equal(np.abs(both.tau[0]), model.effort) and both.limit is not None
    position = simulate(model, inside(model), dt=1e-3, steps=50, controller=Constant(tau),
                        limits={"effort": False})
    assert np.all(position.tau == 1000.0) and position.limit is not None
    effort = simulate(model, inside(model), dt=1e-3, steps=50, controller=Constant(tau), limits={"position": False})
    assert np.array_equal(effort.tau[0], both.tau[0]) and effort.limit is None
    with pytest.raises(InputError, match="limits must be"):
        simulate(model, dt=1e-3, steps=5, limits={"positions": True})


@pytest.mark.parametrize("integrator", ["semi-implicit", "rk4"])
def test_a_saturated_pd_records_the_torque_applied(integrator):
    """arm6's PD pulled far from its target saturates its shoulder (effort 150 N·m): the recorded torque stays
    within ±effort and is the one the motion took (inverse dynamics of the rows), implicit gains and all."""
    model = dynlib.load(ROBOTS_DIR / "arm6.urdf")
    pd = PD(kp=[4000, 6000, 3000, 300, 200, 100], kd=[72, 86, 25, 1.0, 0.4, 0.08], target=[1.5, -1, 1, 0, 0, 0])
    r = simulate(model, dt=1e-3, steps=400, integrator=integrator, controller=pd, joint_friction=False)
    assert r.diverged is None
    assert np.all(np.abs(r.tau) <= model.effort * (1 + 1e-12))
    assert np.any(np.abs(r.tau[:, 0]) == model.effort[0])
    for k in range(0, 400, 37):
        np.testing.assert_allclose(rnea(model, r.q[k], r.v[k], r.a[k]), r.tau[k], rtol=1e-8, atol=1e-6)


def test_cli_no_limits_columns_and_warnings(tmp_path):
    path = ROBOTS_DIR / "arm7.urdf"
    model = dynlib.load(path)
    out, free = tmp_path / "held.csv", tmp_path / "free.csv"
    tau = ",".join(["400"] + ["0"] * (model.nv - 1))
    r = invoke("simulate", path, "--steps", "600", "--tau", tau, "--columns", "q,tau,limits", "-o", out)
    assert r.returncode == 0, r.stderr
    header = out.read_text().splitlines()[0].split(",")
    held = [n for n in model.v_names if np.isfinite(model.upper[model.q_names.index(n)])]
    assert [c for c in header if c.startswith("limit.")] == [f"limit.{n}" for n in held]
    warned = [line for line in r.stderr.splitlines() if line.startswith("dyn: warning:")]
    assert len([w for w in warned if "saturated" in w and model.v_names[0] in w]) == 1, warned
    assert not any("switched off" in w for w in warned), warned
    r = invoke("simulate", path, "--steps", "600", "--tau", tau, "--no-limits", "-o", free)
    warned = [line for line in r.stderr.splitlines() if line.startswith("dyn: warning:")]
    assert r.returncode == 0 and any("effort limit 176" in w and "switched off" in w for w in warned), warned
    r = invoke("simulate", path, "--steps", "5", "--no-limits", "--columns", "q,limits", "-o", free)
    assert r.returncode == 2 and "limits columns" in r.stderr


def test_a_limit_with_lower_above_upper_is_a_one_line_error(tmp_path):
    text = (ROBOTS_DIR / "pendulum.urdf").read_text()
    assert "<limit" in text
    start = text.index("<limit")
    end = text.index(">", start) + 1
    bad = tmp_path / "bad.urdf"
    bad.write_text(text[:start] + '<limit lower="1" upper="-1" effort="10" velocity="1"/>' + text[end:])
    line = text[:start].count("\n") + 1
    out = tmp_path / "out.csv"
    r = invoke("simulate", bad, "--steps", "5", "-o", out)
    assert r.returncode == 2 and not out.exists()
    assert r.stderr.startswith(f"dyn: error: {bad}:{line}:") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "lower limit 1.0 is above upper limit -1.0" in r.stderr
