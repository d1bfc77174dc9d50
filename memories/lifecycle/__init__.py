"""What happens to memories over time, at the end and beyond their organisation: how strongly
a memory is held (strength.py), decay (decay.py), expiry (expiry.py), erasure (erasure.py),
stats (stats.py), export and import as JSONL (portability.py the format, export.py,
importing.py), and re-embedding with another model (reembed.py)."""
