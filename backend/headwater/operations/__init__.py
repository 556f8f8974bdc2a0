"""Running Headwater for years: raw-event partitions made ahead of need, and retention."""
