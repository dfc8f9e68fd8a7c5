"""Model endpoints: the neutral contract (`base`), the two wire adapters, endpoint data, prices."""
