"""The Alembic migrations, shipped in the wheel as package data of this package (``env.py``,
``script.py.mako``, ``versions/``); ``adapt.store.migrate`` finds them with importlib.resources,
so an installed ``adapt`` (not only a checkout) can migrate its database."""
