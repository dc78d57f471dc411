"""Worker test fixtures live in tests/conftest.py (the e2e tests use them too)."""
