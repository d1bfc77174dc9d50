import pytest

# Tests that commit for real. Between them the tables are emptied with TRUNCATE, which only
# the owner role may run (it ignores row-level security), hence the second connection.
committing = pytest.mark.django_db(transaction=True, databases=["default", "owner"])
