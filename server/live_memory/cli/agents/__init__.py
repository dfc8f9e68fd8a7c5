"""Connect coding agents other than Claude Code to Live Memory: one module per agent, each editing its config."""
