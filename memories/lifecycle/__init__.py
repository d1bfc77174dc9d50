"""What happens to memories at the end and beyond their organisation: erasure (erasure.py),
export and import as JSONL (portability.py the format, export.py, importing.py)."""
