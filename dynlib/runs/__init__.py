"""What a user runs on top of the physics: YAML scenarios, sweeps, the energy check and the web viewer.
"""
