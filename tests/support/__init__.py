"""What tests share besides fixtures: fakes, helpers and the processes they start. Imported by
the tests that use them (never from a ``conftest.py``):

- :mod:`.services`: the service fixtures (databases, Celery queues and worker processes, the
  simulator's server), a pytest plugin the root ``conftest.py`` registers; it imports the
  database and queue clients only when a test asks for one of its fixtures
- :mod:`.databases`: throw-away migrated SQLite and PostgreSQL databases
- :mod:`.workers`: real Celery worker processes and the helpers their tests poll with
- :mod:`.simserver`: the simulator's OpenAI-compatible server in a process
- :mod:`.api`: the fake dispatcher and the settings the API tests build apps with
- :mod:`.openai_http`: a fake OpenAI-compatible server over ``httpx.MockTransport``, and its
  reply bodies
- :mod:`.models`: a recorder of every model the settings build
- :mod:`.sqldb`, :mod:`.bash_data`: the InterCode environments' data and servers (fixtures)
- :mod:`.httpreceiver`, :mod:`.webhook_receiver`: HTTP receivers in their own processes
"""
