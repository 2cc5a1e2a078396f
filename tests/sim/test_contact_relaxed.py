"""Relaxed contact (dynlib.sim.contact.relaxed): MuJoCo-style soft constraints on the unilateral problem.

A ball rests at the depth the soft constraint predicts, (1 − d)/d · g / k with
k = 1/(d² τ² ζ²) (so ∝ τ²); forces never pull and stay in the cone; the
quadruped's feet carry m g with millimetre sinkage; a box on a slope barely
creeps below the friction angle and slides with a = g (sin θ − μ cos θ) above.
"""
import math

import numpy as np
import pytest

from dynlib.sim.contact.relaxed import IMPEDANCE
from dynlib.runs.scenario import load_scenario, run

from tests.sim import test_contact_unilateral as U

SCENARIOS = U.SCENARIOS
G = U.G


@pytest.fixture(autouse=True)
def relaxed(monkeypatch):
    monkeypatch.setattr(U, "MODEL", "relaxed")


@pytest.mark.parametrize("tc", [0.02, 0.01])
def test_ball_rests_at_the_soft_constraint_depth(tc):
    r = U.drop(U.load("ball"), 0.2, steps=3000, friction=0.5, time_constant=tc)
    d = IMPEDANCE
    k = 1.0 / (d * d * tc * tc)
    assert r.penetration[-1, 0] == pytest.approx((1 - d) / d * G / k, rel=1e-6)
    assert r.contact_force[-1, 0] == pytest.approx([0.0, 0.0, G], abs=1e-9)
    assert np.abs(r.v[-1]).max() < 1e-9
    U.assert_in_cone(r.contact_force, 0.5)


def test_rolling_ball_forces_stay_in_the_cone():
    r = U.drop(U.load("ball"), 0.1, v0=np.array([1.0, 0, 0, 0, 0, 0]), friction=0.3)
    U.assert_in_cone(r.contact_force, 0.3)
    assert r.contact_solver["steps_not_converged"] == 0


def test_quadruped_stands_feet_carry_its_weight():
    r = run(load_scenario(SCENARIOS / "contact_relaxed_quadruped.yaml"))
    assert r.diverged is None
    assert r.contact_force[-1, :, 2].sum() == pytest.approx(12.0 * G, rel=0.01)
    assert np.abs(r.v[-1, :6]).max() < 1e-4
    assert np.all(r.penetration[-1] > 0) and r.penetration[-1].max() < 3e-3
    U.assert_in_cone(r.contact_force, 0.8)


@pytest.mark.parametrize("theta_deg, sticks", [(20.0, True), (35.0, False)])
def test_box_on_a_slope_sticks_below_the_friction_angle_and_slides_above(theta_deg, sticks):
    mu, th = 0.5, math.radians(theta_deg)
    model = U.load("box").with_gravity([G * math.sin(th), 0.0, -G * math.cos(th)])
    r = U.drop(model, 0.025, steps=1000, friction=mu)
    if sticks:
        assert abs(r.v[-1, 0]) < 5e-3  # creeps (compliant friction): 1.5 mm/s, vs 1.6 m/s sliding at 35°
        assert abs(r.v[-1, 0] - r.v[len(r) // 2, 0]) < 1e-3  # steady, not accelerating
    else:
        assert r.v[-1, 0] == pytest.approx(G * (math.sin(th) - mu * math.cos(th)), rel=0.02)
    assert r.contact_force[-1, :, 2].sum() == pytest.approx(2.0 * G * math.cos(th), rel=1e-3)
    U.assert_in_cone(r.contact_force, mu)


@pytest.mark.parametrize("tc, zeta", [(0.02, 1.0), (0.01, 0.7)])
def test_the_direct_form_is_the_time_constant_form_with_mujocos_conversion(tc, zeta):
    """MuJoCo's negative solref: stiffness_per_mass = 1/(τ² ζ²), damping_per_mass = 2/τ give the spring and damper
    of (time_constant τ, damping_ratio ζ): the same motion, to round-off."""
    model = U.load("ball")
    v0 = np.array([0.5, 0, 0, 0, 0, 0])
    a = U.drop(model, 0.2, v0=v0, steps=800, friction=0.5, time_constant=tc, damping_ratio=zeta)
    b = U.drop(model, 0.2, v0=v0, steps=800, friction=0.5, stiffness_per_mass=1 / (tc * zeta) ** 2,
               damping_per_mass=2 / tc)
    assert np.abs(a.q - b.q).max() < 1e-12 and np.abs(a.contact_force - b.contact_force).max() < 1e-8
    assert a.penetration.max() > 1e-4  # the contact did happen


@pytest.mark.parametrize("stiffness", [2e4, 8e4])
def test_a_direct_stiffness_is_used_rest_depth_falls_as_one_over_it(stiffness):
    """`stiffness_per_mass: 20000` (once `stiffness`, ignored) is used: the ball rests at (1 − d)/d · g / k with
    k = stiffness_per_mass / d² (and damping_per_mass 2·sqrt(stiffness_per_mass): critically damped)."""
    r = U.drop(U.load("ball"), 0.2, steps=3000, friction=0.5, stiffness_per_mass=stiffness,
               damping_per_mass=2 * math.sqrt(stiffness))
    d = IMPEDANCE
    assert r.penetration[-1, 0] == pytest.approx((1 - d) / d * G * d * d / stiffness, rel=1e-6)
    assert r.contact_force[-1, 0] == pytest.approx([0.0, 0.0, G], abs=1e-9)
