"""Forward simulation: the compiled loop (`simulate`), its integrators, the pipeline stages
(controllers, passive forces, accelerations) and the forward contact models (`contact`).
"""
