"""What dyn reads and writes: URDF (with xacro and package:// paths; locked joints: `locks`),
trajectories (CSV, Parquet), recordings (ROS bags, rostopic and PlotJuggler CSVs), column names,
figures (PNG, SVG, PDF) and safe output files.
"""
