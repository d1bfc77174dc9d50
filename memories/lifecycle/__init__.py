"""What happens to memories over time and at the end: decay (decay.py), expiry (expiry.py),
erasure (erasure.py)."""
