"""The HTTP API (FastAPI): ``api.main.create_app`` builds the app, ``api.serve.serve`` runs it."""
