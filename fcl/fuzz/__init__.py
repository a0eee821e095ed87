"""Random program generation and differential testing (issue 12): see fcl/fuzz/runner.py."""
