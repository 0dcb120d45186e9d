"""rewardkit-bindings: rewardkit rewards in the shapes TRL, verl and OpenRLHF call (docs/bindings.md).

Each trainer's module is imported by that trainer (or by ``rewardkit_bindings.get(name)``), never here:
importing the package loads no trainer's code.
"""
