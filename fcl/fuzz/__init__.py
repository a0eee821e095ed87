"""Random program generation and differential testing: see fcl/fuzz/runner.py."""
