"""Unilateral contact (dynlib.sim.contact.unilateral): time stepping with impulses, PGS, friction cone.

Physics: a dropped ball comes to rest on the ground (penetration below 1 mm all
the way, weight carried); the quadruped stands (forces sum to m g, base at rest);
forces never pull and stay inside the cone μ λn; a box on a slope sticks exactly
below the friction angle and slides with a = g (sin θ − μ cos θ) above it; the
solver reports steps stopped on its iteration limit.
"""
import math

import numpy as np
import pytest

import dynlib
from dynlib.errors import InputError
from dynlib.runs.scenario import load_scenario, run
from dynlib.sim.simulate import simulate

from helpers import ROBOTS_DIR

SCENARIOS = ROBOTS_DIR.parent / "scenarios"
G = 9.81
MODEL = "unilateral"


def load(name):
    return dynlib.load(ROBOTS_DIR / f"{name}.urdf", floating_base=True)


def drop(model, z0, v0=None, dt=1e-3, steps=2000, **contact):
    q0 = model.q_neutral.copy()
    q0[2] = z0
    spec = {"model": MODEL, "points": "from-collision", **contact}
    return simulate(model, q0, v0, dt=dt, steps=steps, integrator="semi-implicit", contacts=spec)


def assert_in_cone(f, mu, normal=(0.0, 0.0, 1.0)):
    n = np.asarray(normal)
    fn = f @ n
    ft = np.linalg.norm(f - fn[..., None] * n, axis=-1)
    assert fn.min() >= -1e-9  # no pulling
    assert np.all(ft <= mu * fn * (1 + 1e-9) + 1e-9)


def test_dropped_ball_comes_to_rest_on_the_ground():
    r = drop(load("ball"), 0.5, friction=0.5)
    assert r.diverged is None and r.contact_solver["steps_not_converged"] == 0
    assert r.penetration.max() < 1e-3
    assert r.q[-1, 2] == pytest.approx(0.1, abs=1e-5)
    assert np.abs(r.v[-1]).max() < 1e-6
    assert r.contact_force[-1, 0] == pytest.approx([0.0, 0.0, G], abs=1e-6)
    assert_in_cone(r.contact_force, 0.5)


def test_rolling_ball_forces_stay_in_the_cone():
    v0 = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    r = drop(load("ball"), 0.1, v0=v0, dt=1e-4, steps=5000, friction=0.3)
    assert_in_cone(r.contact_force, 0.3)
    # slides, then rolls without slipping (v = r ω) at 5/7 of the initial speed (angular momentum
    # about the contact point); first order in dt (0.7268 at dt = 1e-3, 0.7155 at 1e-4)
    speed = np.linalg.norm(r.v[-1, :3])
    assert speed == pytest.approx(0.1 * np.linalg.norm(r.v[-1, 3:]), rel=1e-6)
    assert speed == pytest.approx(5 / 7, rel=5e-3)


def test_quadruped_stands_feet_carry_its_weight():
    r = run(load_scenario(SCENARIOS / f"contact_{MODEL}_quadruped.yaml"))
    assert r.diverged is None
    fz = r.contact_force[-1, :, 2]
    assert fz.sum() == pytest.approx(12.0 * G, rel=0.01)
    assert np.abs(r.v[-1, :6]).max() < 1e-4
    assert np.abs(r.penetration).max() < 1e-3
    assert_in_cone(r.contact_force, 0.8)


@pytest.mark.parametrize("theta_deg, sticks", [(20.0, True), (35.0, False)])
def test_box_on_a_slope_sticks_below_the_friction_angle_and_slides_above(theta_deg, sticks):
    mu, th = 0.5, math.radians(theta_deg)  # friction angle atan(0.5) = 26.6°
    model = load("box").with_gravity([G * math.sin(th), 0.0, -G * math.cos(th)])  # the slope: gravity tilted
    r = drop(model, 0.025, steps=1000, friction=mu)
    assert r.diverged is None
    if sticks:
        assert np.abs(r.v[-1]).max() < 1e-6 and abs(r.q[-1, 0]) < 1e-5
    else:
        assert r.v[-1, 0] == pytest.approx(G * (math.sin(th) - mu * math.cos(th)) * 1.0, rel=0.01)
    assert r.contact_force[-1, :, 2].sum() == pytest.approx(2.0 * G * math.cos(th), rel=1e-3)
    assert_in_cone(r.contact_force, mu)


def test_iteration_limit_is_reported():
    sc = load_scenario(SCENARIOS / f"contact_{MODEL}_quadruped.yaml",
                       {"contacts.max_iterations": 2, "duration": 0.2})
    rep = run(sc).contact_solver
    assert rep["steps_not_converged"] > 0 and rep["max_sweeps"] == 2 and rep["worst_change"] > rep["tolerance"]


def test_needs_the_semi_implicit_integrator():
    with pytest.raises(InputError, match="semi-implicit"):
        simulate(load("ball"), dt=1e-3, steps=2, integrator="rk4", contacts={"model": MODEL})
