"""Worker test fixtures live in tests/support/services.py (the e2e, API and service tests use them too)."""
