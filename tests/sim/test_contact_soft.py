"""Soft contact (dynlib.sim.contact.soft): physics, not snapshots.

A ball rests at the static penetration m g / k; with b = 0 a bouncing ball keeps
its energy (kinetic + potential + spring ½ k p²) to the integrator's accuracy and
with damping loses it monotonically; the quadruped's four feet carry m g once
settled; a box on a slope sticks (creeps at about the slip velocity) below the
friction angle and slides with a = g (sin θ - μ cos θ) above it.
"""
import math

import numpy as np
import pytest

import dynlib
from dynlib.sim.contact.points import contact_points
from dynlib.errors import InputError
from dynlib.runs.scenario import load_scenario, run
from dynlib.sim.simulate import simulate

from helpers import ROBOTS_DIR

SCENARIOS = ROBOTS_DIR.parent / "scenarios"
G = 9.81


def ball():
    return dynlib.load(ROBOTS_DIR / "ball.urdf", floating_base=True)


def box():
    return dynlib.load(ROBOTS_DIR / "box.urdf", floating_base=True)


def drop(model, z0, dt=1e-3, steps=3000, integrator="rk4", every=1, **contact):
    q0 = model.q_neutral.copy()
    q0[2] = z0
    spec = {"model": "soft", "points": "from-collision", **contact}
    return simulate(model, q0, dt=dt, steps=steps, integrator=integrator, every=every, contacts=spec)


def test_points_from_collision_sphere_lowest_point_and_box_corners():
    pb = contact_points(ball(), "from-collision")
    assert pb.names == ("ball",) and pb.radius[0] == 0.1
    px = contact_points(box(), "from-collision")
    assert len(px.names) == 8 and np.allclose(np.abs(px.p), [0.1, 0.05, 0.025])
    quad = dynlib.load(ROBOTS_DIR / "quadruped.urdf", floating_base=True)
    pq = contact_points(quad, [{"frame": "lf_foot", "offset": (0, 0, -0.02)}, {"frame": "lf_foot", "name": "x"}])
    assert pq.names == ("lf_foot", "x")
    with pytest.raises(InputError, match="no frame"):
        contact_points(quad, [{"frame": "lf_fot"}])


@pytest.mark.parametrize("integrator", ["rk4", "semi-implicit", "euler"])
def test_dropped_ball_rests_at_the_static_penetration(integrator):
    k = 1.0e4
    r = drop(ball(), 0.3, steps=4000, integrator=integrator, stiffness=k, damping=50.0, friction=0.5)
    assert r.diverged is None
    expected = 1.0 * G / k
    assert r.penetration[-1, 0] == pytest.approx(expected, rel=1e-3)
    assert r.q[-1, 2] == pytest.approx(0.1 - expected, abs=1e-6)
    assert r.contact_force[-1, 0] == pytest.approx([0.0, 0.0, G], abs=1e-3)
    assert np.abs(r.v[-1]).max() < 1e-3
    assert r.contact_force[:, :, 2].min() >= 0.0  # never pulls


def total_energy(r, k):
    spring = 0.5 * k * np.maximum(r.penetration[:, 0], 0.0) ** 2
    return r.energy[:, 2] + spring


def test_undamped_bounce_keeps_its_energy_to_the_integrators_accuracy():
    k, drift = 1.0e4, []
    for dt in (2e-4, 1e-4):
        r = drop(ball(), 0.3, dt=dt, steps=int(round(2.0 / dt)), stiffness=k, damping=0.0, friction=0.0)
        assert r.penetration[:, 0].max() > 0.02  # it hit the ground, five times in 2 s
        assert r.q[len(r) // 2:, 2].max() > 0.2999  # and comes back up to where it started
        drift.append(np.ptp(total_energy(r, k)))
    assert drift[0] < 5e-5 * 1.0 * G * 0.2 * 10  # 2 J dropped: relative drift below 5e-5
    assert drift[1] < drift[0] / 2.5  # and it shrinks with dt (RK4, order reduced by the kink at p = 0)


def test_damped_bounce_loses_energy_monotonically():
    k = 1.0e4
    r = drop(ball(), 0.3, dt=2e-4, steps=10000, stiffness=k, damping=20.0, friction=0.0)
    E = total_energy(r, k)
    assert np.all(np.diff(E) <= 1e-9)
    assert E[-1] < E[0] - 1.0  # most of the 2 J of the drop is gone


def test_quadruped_stands_feet_carry_its_weight():
    r = run(load_scenario(SCENARIOS / "contact_soft_quadruped.yaml"))
    assert r.diverged is None
    mg = 12.0 * G
    fz = r.contact_force[-1, :, 2]
    assert fz.sum() == pytest.approx(mg, rel=0.01)
    assert np.all(fz > 0.2 * mg / 4)
    assert np.abs(r.v[-1, :6]).max() < 1e-3  # base at rest
    assert np.all(r.penetration[-1] > 0) and np.all(r.penetration[-1] < 3e-3)
    names, data = r.table(("q", "contact"))
    assert "contact.lf_foot.fz" in names and "penetration.rh_foot" in names
    assert data[-1, names.index("contact.lf_foot.fz")] == fz[0]
    assert data[-1, names.index("penetration.lf_foot")] == r.penetration[-1, 0]
    assert np.all(data[:, names.index("contact.lf_foot.tx")] == 0.0)


@pytest.mark.parametrize("theta_deg, sticks", [(20.0, True), (35.0, False)])
def test_box_on_a_slope_sticks_below_the_friction_angle_and_slides_above(theta_deg, sticks):
    mu, th = 0.5, math.radians(theta_deg)  # friction angle atan(0.5) = 26.6°
    model = box().with_gravity([G * math.sin(th), 0.0, -G * math.cos(th)])  # the slope: gravity tilted
    r = drop(model, 0.025, dt=1e-4, steps=10000, every=100, stiffness=1e5, damping=400.0, friction=mu,
             slip_velocity=1e-3)
    assert r.diverged is None
    vx = r.v[-1, 0]
    if sticks:
        assert abs(vx) < 1e-2  # creep ~ eps tanθ / (μ - tanθ) = 2.7 mm/s
    else:
        a = G * (math.sin(th) - mu * math.cos(th))
        assert vx == pytest.approx(a * 1.0, rel=0.03)
    fz = r.contact_force[-1, :, 2].sum()
    assert fz == pytest.approx(2.0 * G * math.cos(th), rel=1e-3)
    ft = np.hypot(r.contact_force[-1, :, 0], r.contact_force[-1, :, 1])
    assert np.all(ft <= mu * r.contact_force[-1, :, 2] + 1e-12)
