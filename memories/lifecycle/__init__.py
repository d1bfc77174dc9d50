"""What happens to memories over time and at the end: erasure (erasure.py)."""
