"""The ground floor of the physics: spatial algebra, joint models and the model record.

`spatial` (6-vector algebra, the compile decorators' home for kernels), `joints` (joint codes and
their motion subspaces), `model` (`Model`, `Data`, the arrays every kernel takes), `pinocchio_order`
(Pinocchio's joint order and the maps of q and v to and from it).
"""
