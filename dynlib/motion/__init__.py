"""Quantities recovered from a motion: inverse dynamics of trajectories (`inverse`), velocity and
acceleration estimates (`derivatives`), contact inverse dynamics (`contact_id`, with
`wrench_distribution` and `friction_cones`) and parameter identification (`identification`).
"""
